// The TileLang-syntax front end: reads a kernel file written in the paper's Python syntax (no
// Python interpreter involved) and produces the same IR as the C++ builder.
//
// A kernel file holds one kernel: a `@T.prim_func` (or `@tilelang.jit`) function whose
// parameters are `T.Tensor((M, K), "float16")` tensors, optionally inside an enclosing
// `def name(M, N, K, block_M=128, ...)` whose parameters are the kernel's parameters (set with
// -D, defaults from the file) and which returns the inner function. The body uses
// `with T.Kernel(...) as (bx, by):`, T.alloc_*, tile operators, loops, `if`, stores, local
// constants and `T.macro` helpers (inlined). docs/frontend.md lists the accepted subset.
//
// Comment directives (`# tessel: ...`, on a line of their own):
//   reference=NAME                  the built-in example whose reference checks this kernel
//   A: T.Tensor((M, K), "float16")  shape and dtype of a parameter annotated with a bare T.Tensor
//
// Errors: KernelFileError for text only a front end can get wrong (syntax, unsupported
// constructs, unknown names, wrong argument counts or kinds) — the CLI reports it as a malformed
// input (exit 2); the IR's own validation errors (mismatched gemm shapes, bad thread counts)
// stay UserErrors (exit 1). Every message starts with file:line:column and quotes the line with
// a caret under the offending column.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/kernel.h"

namespace tessel {

/// The kernel file is malformed: a syntax error, an unsupported construct, an unknown name, a
/// wrong number or kind of arguments. The message names file:line:column and quotes the line.
class KernelFileError : public UserError {
 public:
  explicit KernelFileError(const std::string& message) : UserError(message) {}
};

/// One parameter of the enclosing def.
struct KernelFileParam {
  std::string name;
  std::optional<std::string> default_text;  ///< the default as -D would spell it; nullopt: none
  SourceLoc loc;
};

/// An `assert` on sizes that are symbolic when the file is read (T.dynamic or T.const
/// dimensions): checked before a run, once the sizes are known.
struct KernelAssertion {
  Expr condition;
  std::string message;  ///< "assertion failed: MESSAGE"
  SourceLoc loc;
};

/// A parsed kernel file.
struct ParsedKernel {
  Kernel kernel;
  std::string generator;                    ///< the enclosing def's name ("" when there is none)
  std::vector<KernelFileParam> params;      ///< the enclosing def's parameters, in order
  std::optional<std::string> reference;     ///< NAME of `# tessel: reference=NAME`
  SourceLoc reference_loc;                  ///< where that directive is
  std::vector<KernelAssertion> assertions;  ///< asserts on symbolic sizes, checked before a run
};

/// Parses `source`, the text of the kernel file `path` (`path` only names locations). `defines`
/// set the enclosing def's parameters, as the text after `-D name=`: a number, True/False, a
/// quoted or bare string. Names that are not parameters are ignored here (the caller decides
/// whether they size symbolic dimensions or are mistakes).
ParsedKernel parse_kernel(const std::string& source, const std::string& path,
                          const std::map<std::string, std::string>& defines = {});

/// Reads the file at `path` and parses it (KernelFileError when it cannot be read).
ParsedKernel parse_kernel_file(const std::string& path,
                               const std::map<std::string, std::string>& defines = {});

}  // namespace tessel
