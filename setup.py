"""The Python package's build: setuptools with a CMake step.

The extension zyntax._zyntax is the CMake target `_zyntax` (python/CMakeLists.txt):
the API, the compiler and LLVM's static libraries in one shared object. It is
built in the tree's CMake build directory (build/, the one scripts/setup.sh
makes; ZYNTAX_BUILD_DIR names another), so that a tree already built compiles
nothing again, and copied into the package without its debug information.
"""
import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE_DIR = os.path.dirname(os.path.abspath(__file__))


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build_dir = os.path.abspath(os.environ.get("ZYNTAX_BUILD_DIR", os.path.join(SOURCE_DIR, "build")))
        # The module is built for the interpreter CMake finds as Python_EXECUTABLE;
        # it must be this one (a virtual environment's python is its base's).
        python = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
        if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
            self._run(["cmake", "-S", SOURCE_DIR, "-B", build_dir, "-G", "Ninja",
                       "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DPython_EXECUTABLE=" + python])
        jobs = str(os.cpu_count() or 1)
        self._run(["cmake", "--build", build_dir, "--target", "_zyntax", "-j", jobs])
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = os.path.join(build_dir, "python", "zyntax", "_zyntax" + suffix)
        if not os.path.exists(built):
            raise RuntimeError(f"{built} was not built: the CMake build in {build_dir} is for another "
                               f"Python than {python} (set ZYNTAX_BUILD_DIR to a fresh directory)")
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        # Without debug information: a fifth of the size.
        if shutil.which("strip"):
            self._run(["strip", "--strip-debug", "-o", target, built])
        else:
            shutil.copyfile(built, target)

    def _run(self, command):
        print(" ".join(command), flush=True)
        subprocess.check_call(command)


setup(ext_modules=[CMakeExtension("zyntax._zyntax")], cmdclass={"build_ext": CMakeBuild})
