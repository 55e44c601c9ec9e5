// The `zyntax` command: run, check and compile ZynML programs, list devices.
// Exit codes: 0 success, 1 an error in the program, 2 a usage error.

#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "cir/pass_manager.hpp"
#include "cir/printer.hpp"
#include "driver/session.hpp"
#include "interp/host_interpreter.hpp"
#include "runtime/device.hpp"
#include "sema/host_checker.hpp"
#include "syntax/ast_printer.hpp"

namespace {

using namespace zyntax;

constexpr int kOk = 0;
constexpr int kProgramError = 1;
constexpr int kUsageError = 2;

// Parses and checks; prints the diagnostics. Null on errors.
LoadedModule* load_and_check(Session& session, const std::string& path, std::vector<CheckedKernel>* kernels) {
  LoadedModule* m = session.load(path, {});
  if (m && !session.diags().has_errors()) check_program(session, *m, kernels);
  if (session.diags().has_errors() || !m) {
    session.diags().print(std::cerr);
    return nullptr;
  }
  session.diags().print(std::cerr);  // warnings
  return m;
}

int run_command(const std::string& path, const std::string& device, uint64_t seed) {
  if (!DeviceRegistry::global().find(device)) {
    std::cerr << "zyntax: error: device '" << device << "' is not available (available: "
              << DeviceRegistry::global().available() << ", or auto)\n";
    return kUsageError;
  }
  Session session;
  LoadedModule* m = load_and_check(session, path, nullptr);
  if (!m) return kProgramError;
  RunOptions options;
  options.device = device;
  options.seed = seed;
  options.out = &std::cout;
  Interpreter interp(session, options);
  size_t before = session.diags().diagnostics().size();
  bool ok = interp.run(*m);
  std::cout.flush();
  if (!ok) {
    DiagnosticEngine runtime_errors(session.sources());
    for (size_t i = before; i < session.diags().diagnostics().size(); ++i)
      runtime_errors.report(session.diags().diagnostics()[i]);
    runtime_errors.print(std::cerr);
    return kProgramError;
  }
  return kOk;
}

int check_command(const std::string& path) {
  Session session;
  return load_and_check(session, path, nullptr) ? kOk : kProgramError;
}

int compile_command(const std::string& path, const std::string& emit, const std::string& output) {
  Session session;
  std::vector<CheckedKernel> kernels;
  LoadedModule* m = load_and_check(session, path, &kernels);
  if (!m) return kProgramError;
  std::string text;
  if (emit == "ast") {
    text = print_ast(m->ast);
  } else {
    if (kernels.empty()) text = "// " + path + " has no compute blocks\n";
    for (size_t i = 0; i < kernels.size(); ++i) {
      const CheckedKernel& k = kernels[i];
      if (i) text += "\n";
      if (!k.deferred.empty())
        text += "// kernel " + session.kernel_name(k.node) + ": lowered when it runs (" + k.deferred + ")\n";
      else
        text += cir::print(k.kernel);
    }
  }
  if (output.empty() || output == "-") {
    std::cout << text;
    return kOk;
  }
  std::ofstream out(output, std::ios::binary);
  if (!(out << text)) {
    std::cerr << "zyntax: error: cannot write '" << output << "'\n";
    return kProgramError;
  }
  return kOk;
}

int devices_command() {
  for (const auto& d : DeviceRegistry::global().devices()) {
    const DeviceInfo& i = d->info();
    std::cout << i.id << "\t" << i.type << "\t" << i.name << "\t" << i.cores << " cores\t"
              << (i.memory_bytes >> 20) << " MiB\t" << i.backend << "\n";
  }
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zyntax: write a compute kernel once in ZynML, run it on any device"};
  app.set_version_flag("--version", std::string("zyntax ") + ZYNTAX_VERSION);
  app.require_subcommand(1);

  std::string path, device = "auto", emit, output;
  uint64_t seed = 0;
  bool print_passes = false;

  CLI::App* run = app.add_subcommand("run", "Run a program: its host code and every compute block in it");
  run->add_option("file", path, "The .zynml program")->required();
  run->add_option("--device", device, "Where compute blocks run by default: auto, cpu, cpu:reference")
      ->capture_default_str();
  run->add_option("--seed", seed, "Seed of rand()/randn() calls that give none")->capture_default_str();
  run->add_flag("--print-passes", print_passes, "Print each kernel's CIR after every pass to standard error");

  CLI::App* check = app.add_subcommand("check", "Parse and type-check a program without running it");
  check->add_option("file", path, "The .zynml program")->required();

  CLI::App* compile = app.add_subcommand("compile", "Print the parsed program or the Compute IR of each kernel");
  compile->add_option("file", path, "The .zynml program")->required();
  compile->add_option("--emit", emit, "What to print: ast or cir")->required()->check(CLI::IsMember({"ast", "cir"}));
  compile->add_option("-o,--output", output, "Write to this file instead of standard output");
  compile->add_flag("--print-passes", print_passes, "Print each kernel's CIR after every pass to standard error");

  CLI::App* devices = app.add_subcommand("devices", "List the devices compute blocks can run on");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kOk : kUsageError;
  }
  if (print_passes) cir::set_pass_log(&std::cerr);
  try {
    if (run->parsed()) return run_command(path, device, seed);
    if (check->parsed()) return check_command(path);
    if (compile->parsed()) return compile_command(path, emit, output);
    if (devices->parsed()) return devices_command();
  } catch (const std::bad_alloc&) {
    std::cerr << "zyntax: error: out of memory\n";
    return kProgramError;
  } catch (const std::exception& e) {
    // A bug in zyntax, not in the program: say so plainly.
    std::cerr << "zyntax: internal compiler error: " << e.what() << "\n";
    return kProgramError;
  }
  return kUsageError;
}
