// libFuzzer entry point of the kernel-file parser: any bytes are parsed as a kernel file; a
// kernel the parser accepts is printed and parsed again. Only UserErrors may come back — an
// InternalError, another exception or a crash is a bug the fuzzer reports.
// Built with -DTESSEL_FUZZ=ON (clang); seed it with examples/kernels.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/kernel_parser.h"
#include "core/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string source(reinterpret_cast<const char*>(data), size);
  try {
    tessel::ParsedKernel parsed = tessel::parse_kernel(source, "fuzz.py");
    std::string printed = tessel::print_kernel(parsed.kernel);
    (void)tessel::parse_kernel(printed, "printed.py");
  } catch (const tessel::UserError&) {
    // Bad input is expected input.
  }
  return 0;
}
