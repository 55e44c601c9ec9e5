// What the shared library exports: the public API and nothing else.
#pragma once

#if defined(_WIN32)
#define ZYNTAX_API __declspec(dllexport)
#else
#define ZYNTAX_API __attribute__((visibility("default")))
#endif
