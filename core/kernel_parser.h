// The TileLang-syntax front end: reads a kernel file written in the paper's Python syntax (no
// Python interpreter involved) and produces the same IR as the C++ builder.
//
// A kernel file holds one or more kernels among host code (imports, references, test
// harnesses, `if __name__ == "__main__":`), which is skipped. A kernel is a top-level def that
// makes one, decided by what it contains: a kernel function (`@T.prim_func` or
// `@tilelang.jit` with a `with T.Kernel(...)` launch in its body; tensors annotated
// `T.Tensor((M, K), "float16")` in the signature, or declared in the body in the eager style
// with T.const sizes and T.empty outputs), or an enclosing `def name(M, N, K, block_M=128, ...)`
// that defines one and returns it. Parameters that are not tensors are set with -D (defaults
// from the file). The body uses `with T.Kernel(...) as (bx, by):`, T.alloc_*, tile operators,
// loops, `if`, stores, local constants and `T.macro` helpers (inlined); compile-time values are
// evaluated as Python would. docs/frontend.md lists the accepted language.
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

/// One parameter of a kernel file, set with -D.
struct KernelFileParam {
  /// kParameter: of the enclosing def or the jitted kernel function; kConst: a size made by
  /// T.const (symbolic when not set); kDynamic: a T.dynamic size (-D sizes it for a run);
  /// kScalar: a scalar kernel parameter (`n: T.int32`): -D sets it, an integer one is symbolic
  /// when not set.
  enum class Kind : uint8_t { kParameter, kConst, kDynamic, kScalar };
  std::string name;
  std::optional<std::string> default_text;  ///< the default as -D would spell it; nullopt: none
  SourceLoc loc;
  Kind kind = Kind::kParameter;
  /// Set when the default is what the file's host code passes (`matmul(1024, ...)` in main()):
  /// that call.
  std::optional<SourceLoc> host_call = std::nullopt;
};

/// One kernel a file defines (a top-level def that makes a kernel): what --kernel NAME picks.
struct KernelFileEntry {
  std::string name;
  SourceLoc loc;
  std::vector<KernelFileParam> params;  ///< -D parameters, T.const and T.dynamic sizes
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
  std::string generator;                    ///< the top-level def read (enclosing def or kernel)
  std::vector<KernelFileParam> params;      ///< its -D parameters and T.const sizes, in order
  std::vector<std::string> outputs;         ///< tensors it writes (T.empty returns, out_idx)
  std::optional<std::string> reference;     ///< NAME of `# tessel: reference=NAME`
  SourceLoc reference_loc;                  ///< where that directive is
  std::vector<KernelAssertion> assertions;  ///< asserts on symbolic sizes, checked before a run
};

/// Parses `source`, the text of the kernel file `path` (`path` only names locations). `defines`
/// set the enclosing def's parameters, as the text after `-D name=`: a number, True/False, a
/// quoted or bare string. Names that are not parameters are ignored here (the caller decides
/// whether they size symbolic dimensions or are mistakes).
/// `kernel` names the top-level def to read when the file has several (KernelFileError when
/// the file has several and `kernel` is empty, listing them).
ParsedKernel parse_kernel(const std::string& source, const std::string& path,
                          const std::map<std::string, std::string>& defines = {},
                          const std::string& kernel = "");

/// The kernels `source` defines, with their parameters, without building any.
std::vector<KernelFileEntry> list_kernels(const std::string& source, const std::string& path);

/// Reads the file at `path` and parses it (KernelFileError when it cannot be read).
ParsedKernel parse_kernel_file(const std::string& path,
                               const std::map<std::string, std::string>& defines = {},
                               const std::string& kernel = "");

}  // namespace tessel
