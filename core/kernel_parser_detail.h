// Internals of the kernel-file parser shared by core/kernel_parser*.cpp: the values names stand
// for, scopes, call arguments, and the Parser that reads a file and builds the IR as it goes.
//
// The parser is a recursive-descent reader over the tokenizer's kFile tokens that evaluates as it
// parses (the way TVMScript runs a kernel's Python): the enclosing def and module-level
// assignments are evaluated to compile-time values, and every statement of the kernel body is
// turned into IR through the same node and operator make() functions the C++ builder uses.
// T.macro helpers are inlined by parsing their body again at each call with the arguments bound.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/buffer.h"
#include "core/expr_parser.h"
#include "core/input_limits.h"
#include "core/kernel.h"
#include "core/kernel_parser.h"
#include "core/op_atomic.h"
#include "core/op_gemm.h"
#include "core/op_reduce.h"

namespace tessel::kernel_parser_detail {

/// An IR validation error (one the C++ builder raises too) already located in the file: it
/// stays a UserError (the kernel is wrong), not a KernelFileError (the file is malformed).
class LocatedError : public UserError {
 public:
  explicit LocatedError(const std::string& message) : UserError(message) {}
};

/// A false `assert` of the file: the kernel is wrong (exit 1), with the assert's message.
class AssertionFailure : public LocatedError {
 public:
  explicit AssertionFailure(const std::string& message) : LocatedError(message) {}
};

struct MacroDef;
struct NameScope;

/// What a name, an argument or the right-hand side of an assignment stands for.
struct Value {
  enum class Kind : uint8_t {
    kNone,          ///< None
    kExpr,          ///< a number or an expression: ints, floats, bools, variables, loads
    kString,        ///< "float16", "shared.dyn" (dtypes are strings, as in TileLang)
    kTuple,         ///< (a, b) or [a, b]
    kBuffer,        ///< a tensor parameter or a T.alloc_* buffer
    kRegion,        ///< A[0:32, k * 32:(k + 1) * 32]: a sliced region of a buffer
    kElement,       ///< A[i, j], points only: a load or a point-form region, by context
    kModule,        ///< T (tilelang.language) or tilelang
    kMacro,         ///< a T.macro helper
    kConvertMaker,  ///< _tir_packed_to_unsigned_convert
    kConverter,     ///< _tir_packed_to_unsigned_convert("int", 8)
    kPolicy,        ///< T.GemmWarpPolicy.FullRow
    kKernel,        ///< the kernel function itself (what the enclosing def returns)
    kHost,          ///< host code Tessel does not run (text: what it is, for messages)
  };
  Kind kind = Kind::kNone;
  Expr expr;                  ///< kExpr
  std::string text;           ///< kString; kModule: "T" or "tilelang"; kKernel: its name
  std::vector<Value> items;   ///< kTuple
  bool is_list = false;       ///< kTuple written with brackets
  Buffer buffer;              ///< kBuffer, kRegion, kElement
  BufferRegion region;        ///< kRegion, kElement (point form)
  std::vector<Expr> indices;  ///< kElement
  std::shared_ptr<const MacroDef> macro;
  Kernel kernel;                     ///< kKernel, once built
  std::vector<std::string> outputs;  ///< kKernel: its output tensors (T.empty, out_idx)
  DataType storage;                  ///< kConverter: the packed storage type
  GemmWarpPolicy policy = GemmWarpPolicy::kSquare;
  /// kHost: attributes Tessel knows (argparse's namespace: each option's default)
  std::shared_ptr<const std::map<std::string, Value>> attributes;

  static Value none() { return Value{}; }
  static Value of(Expr e);
  static Value string(std::string s);
  static Value module(std::string name);
  static Value of(Buffer b);
  /// The constant integer, if this is an integer (not bool) literal.
  std::optional<int64_t> as_int() const;
  /// How error messages name it: "the number 3", "the string \"float16\"", "buffer 'A'".
  std::string describe() const;
};

/// A `T.macro` helper: its parameters and where its body starts in the token stream.
struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<std::optional<Value>> defaults;
  size_t body_position = 0;  ///< the ':' that opens the body
  SourceLoc loc;
  /// The scope it was defined in. Weak: that scope's bindings hold this macro, and it outlives
  /// every call (calls happen while the parser is inside it).
  std::weak_ptr<NameScope> closure;
};

/// A name's binding.
struct Binding {
  Value value;
  SourceLoc loc;
  bool kernel_local = false;  ///< bound in the kernel body (buffers, lets): not rebindable
};

/// Names visible at one point of the file; lookups continue in `parent`.
struct NameScope {
  std::shared_ptr<NameScope> parent;
  std::map<std::string, Binding> names;
  const Binding* find(const std::string& name) const;
};

/// One argument of a call as written: positional when `keyword` is empty.
struct Arg {
  Value value;
  Token at;        ///< where the argument starts (its keyword, if any)
  Token value_at;  ///< where its value starts
  std::string keyword;
};

/// A call's arguments and where the call is. `callee` is normalised (`T.copy`).
struct CallArgs {
  std::string callee;
  Token at;
  std::vector<Arg> args;
};

/// A decorator: its normalised name and, when it has arguments, where its '(' is.
struct Decorator {
  std::string name;
  Token at;
  std::optional<size_t> args;
};

/// What a def is, decided by what it contains.
enum class DefRole : uint8_t {
  kHost,       ///< plain Python (a reference, a test harness, main()): never read
  kMacro,      ///< @T.macro
  kKernel,     ///< a kernel function: a T.Kernel launch in its own body, @T.prim_func or
               ///< T.Tensor parameters
  kGenerator,  ///< a function that defines a kernel function inside and returns it
};

/// What scanning a def found.
struct DefScan {
  DefRole role = DefRole::kHost;
  bool macro = false;
  bool jit = false;                   ///< decorated @tilelang.jit / @autotune
  std::set<std::string> declared;     ///< `NAME: T.Tensor(...)` statements of its own body
  std::vector<std::string> consts;    ///< names of T.const("...") in its body
  std::vector<std::string> dynamics;  ///< names of T.dynamic("...") in its body
};

/// A top-level def that makes a kernel: what --kernel NAME picks.
struct KernelEntry {
  std::string name;
  DefScan scan;
  size_t start = 0;  ///< token position of its first decorator (or `def`)
  Token name_token;
};

/// A parameter of a def as written.
struct SignatureParam {
  Token name;
  size_t annotation = 0;        ///< token position of the ':' of its annotation (0: none)
  std::string annotation_head;  ///< the annotation's dotted head, normalised: "T.Tensor", "int"
  std::optional<Value> default_value;
  size_t position = 0;  ///< its index in the signature
};

/// Where the statement being read sits, which decides what it may be.
enum class Context : uint8_t {
  kModule,      ///< top level of the file
  kGenerator,   ///< the enclosing def's body (compile-time values)
  kPreLaunch,   ///< the kernel function's body before `with T.Kernel(...)`
  kKernelBody,  ///< inside `with T.Kernel(...)`
  kPostLaunch,  ///< the kernel function's body after the launch block
};

/// Limits that keep any input, however deep or large, from exhausting the stack or memory (with
/// those shared with the spec parser in core/input_limits.h).
constexpr int kMaxBlockDepth = 48;
constexpr int kMaxLetDepth = 200;
constexpr int kMaxMacroDepth = 16;
constexpr int64_t kMaxStatements = 50000;

/// A `# tessel: NAME: T.Tensor(...)` directive: the annotation text and where it starts.
struct TensorDirective {
  std::string text;
  int line = 0;
  int column = 0;
  bool used = false;
};

class Parser {
 public:
  Parser(const std::string& source, std::string path,
         const std::map<std::string, std::string>& defines);
  /// Reads the whole file. Throws KernelFileError or UserError (see core/kernel_parser.h).
  ParsedKernel run();

  /// Lists the kernels of the whole file (module scan only; nothing is built).
  std::vector<KernelFileEntry> list();
  /// Picks the kernel called `name` (empty: the file's only kernel).
  void set_kernel_choice(std::string name) { kernel_choice_ = std::move(name); }

  // ---- kernel_parser.cpp: limits, directives, imports, decorators --------------------------
 private:
  void start();
  void scan_limits() const;
  void scan_directives();
  void parse_import();
  std::vector<Decorator> parse_decorators();

  // ---- kernel_parser_module.cpp: the file's statements, kinds of def, picking a kernel ------
  void parse_module();
  void parse_module_statement();
  /// Binds the targets of the host statement at the cursor as host values (for messages).
  void mark_host_targets(const std::string& why);
  void parse_module_if();
  /// At a def's name: what the def is, from its decorators, signature and body.
  DefScan scan_def(const std::vector<Decorator>& decorators) const;
  /// At a def's name: is any parameter annotated T.Tensor / T.Buffer?
  bool params_have_tensors() const;
  void parse_def(std::vector<Decorator> decorators, const Token& def_token);
  /// Skips ':' and the block after it unread.
  void skip_suite();
  /// Skips to the ':' that opens the block of the statement at the cursor.
  void skip_to_colon();
  /// Skips a compound statement with its clauses (elif/else/except/finally) unread.
  void skip_compound();
  void skip_simple_statement();
  /// The kernel to read: --kernel NAME, or the file's only one (KernelFileError otherwise).
  const KernelEntry& pick_entry() const;
  void parse_entry(const KernelEntry& entry);

  // ---- kernel_parser_defs.cpp: signatures, the enclosing def, kernel functions, T.macro -----
  /// Reads `(params...)` and an optional `-> annotation`; the cursor ends on the ':'.
  std::vector<SignatureParam> read_signature(const std::string& function);
  /// The dtype of a scalar kernel parameter's annotation (`n: T.int32`), or nullopt.
  static std::optional<DataType> scalar_param_type(const SignatureParam& p);
  /// For `tessel list`: the signature of the kernel def inside a generator's body (the cursor
  /// after the generator's signature); empty when there is none.
  std::vector<SignatureParam> nested_kernel_signature();
  /// Binds parameters set with -D (or their defaults) in `scope` and lists them in result_.
  void bind_compile_time_params(const std::vector<const SignatureParam*>& params,
                                const std::string& function, NameScope& scope);
  void parse_generator(const Token& def_token, const std::vector<Decorator>& decorators);
  /// The value of a -D text for `param`, of the kind of its default.
  Value define_value(const KernelFileParam& param, const std::string& text,
                     const std::optional<Value>& fallback);
  void parse_kernel_def(const Token& def_token, const std::vector<Decorator>& decorators,
                        const DefScan& scan);
  Buffer parse_tensor_param(const Token& name_tok);
  Buffer tensor_from_annotation(const Token& name_tok, const Token& at, const CallArgs& call);
  /// `C = T.empty(shape, dtype)`: a new output parameter of the kernel function.
  Buffer make_empty_tensor(const Token& target, const CallArgs& call);
  /// `return C` / `return C, D` of a kernel function: the T.empty outputs, in order.
  void return_outputs(const Value& value, const Token& at);
  /// The outputs named by `out_idx=` of a decorator, for `kernel`'s parameters.
  std::vector<std::string> outputs_of(const std::vector<Decorator>& decorators,
                                      const Kernel& kernel);
  /// A scalar kernel parameter `name: T.<dtype>`: its -D value as a constant, else (integers) a
  /// symbolic size, else a KernelFileError asking for -D.
  Value scalar_param(const Token& name, DataType dtype);
  /// `T.const("M, N")`: each name a -D integer, or a symbolic size when not set.
  Value make_consts(const CallArgs& call);
  /// The symbolic size called `name` (made on first use).
  Expr dynamic_var(const std::string& name, DataType dtype);
  void finish_kernel(const Token& def_token);
  void parse_macro_def(const Token& def_token);

  // ---- kernel_parser_values.cpp: errors, names, values, expressions --------------------------
 public:
  /// Throws a KernelFileError at `at` with the line quoted and a caret.
  [[noreturn]] void fail(const Token& at, const std::string& message) const;
  SourceLoc loc_of(const Token& t) const { return SourceLoc{path_, t.line, t.column}; }
  /// Rethrows a UserError raised while building IR at `at` as located (see LocatedError).
  [[noreturn]] void relocate(const UserError& error, const Token& at) const;
  /// Runs `fn`, relocating the UserErrors it raises to `at`.
  template <typename Fn>
  auto located(const Token& at, Fn&& fn) const -> decltype(fn()) {
    try {
      return fn();
    } catch (const KernelFileError&) {
      throw;
    } catch (const LocatedError&) {
      throw;
    } catch (const UserError& e) {
      relocate(e, at);
    }
  }

 private:
  [[noreturn]] void unknown_name(const std::string& name, const Token& at) const;
  [[noreturn]] void unclosed(const Token& open, const std::string& what) const;
  /// Fails unless `name` may be bound: an identifier that is no keyword and not `T`.
  void check_binding(const Token& name) const;
  const Token& expect_binding(const std::string& what);
  void check_depth(const Expr& e, const Token& at) const;
  const Binding* lookup(const std::string& name) const;
  void bind(const std::string& name, Value value, const Token& at, bool kernel_local = false);
  /// `tl.copy` with `tl` an alias of tilelang.language -> `T.copy`.
  std::string normalize(const std::string& dotted) const;
  Value attribute(const Value& base, const std::string& attr, const Token& at) const;
  std::vector<Token> read_dotted(std::string& name);
  /// True at the end of a value: `,` `)` `]` `}` `:` `=` `;` or the end of the line.
  bool at_terminator(size_t ahead = 0) const;
  /// An argument or a right-hand side: a string, tuple, list, buffer, region, ... or expression.
  Value parse_value();
  /// A value or, with commas at its top level, a tuple of values (right-hand sides, return).
  Value parse_testlist();
  /// A value that must be a number or an expression.
  Expr parse_expr();
  Expr to_expr(const Value& v, const Token& at, const std::string& what) const;
  /// Elements and T.alloc_var buffers as the expressions they read; other values unchanged.
  Value numeric(const Value& v, const Token& at) const;
  /// Runs `fn`, reporting its UserErrors as errors of the file at `at` (operators on constants).
  template <typename Fn>
  auto located_syntax(const Token& at, Fn&& fn) const -> decltype(fn()) {
    try {
      return fn();
    } catch (const KernelFileError&) {
      throw;
    } catch (const LocatedError&) {
      throw;
    } catch (const UserError& e) {
      fail(at, e.what());
    }
  }

  // ---- kernel_parser_python.cpp: Python's grammar over Values ----------------------------
  /// Reads without evaluating while alive: values are None, names need not exist, nothing
  /// fails but syntax.
  class NoEval {
   public:
    explicit NoEval(Parser& p) : p_(p) { ++p_.no_eval_; }
    ~NoEval() { --p_.no_eval_; }
    NoEval(const NoEval&) = delete;
    NoEval& operator=(const NoEval&) = delete;

   private:
    Parser& p_;
  };
  /// At the start of a value: the `if` of a conditional expression or the `for` of a
  /// comprehension at this bracket level, or nullptr.
  const Token* keyword_ahead() const;
  Value eval_test();
  Value eval_or();
  Value eval_and();
  Value eval_boolean(const char* op);
  Value eval_not();
  Value eval_comparison();
  Value eval_binary(int level);
  Value eval_factor();
  Value eval_power();
  Value eval_primary();
  Value eval_atom();
  Value eval_parenthesised();
  Value eval_list();
  Value eval_subscript(const Value& base, const Token& at);
  /// Skips a bracketed group unread.
  void skip_brackets();

  // ---- kernel_parser_builtins.cpp: calls ------------------------------------------------------
  /// Calls `callee` with the arguments at the cursor ('(').
  Value eval_call(const Value& callee, const Token& at);
  /// Calls the function called `name` (T.*, a Python built-in, math.*, ...).
  Value call_function(const std::string& name, const Token& at);
  /// The Python built-ins and library functions of constants; nullopt for other names (the
  /// cursor stays on the '(').
  std::optional<Value> python_call(const std::string& name, const Token& at);
  /// `base.method(...)` with the cursor on the '('.
  Value eval_method(const Value& base, const Token& method);

  // ---- kernel_parser_args.cpp: functions in expressions, call arguments ------------------
  /// The functions of T with arguments of their own kinds: T.cast, T.ceildiv, T.dynamic, ...
  /// `callee` is normalised (T.cast); the cursor is on the '('. nullopt for other names (the
  /// cursor stays there).
  std::optional<Expr> expression_call(const std::string& callee, const Token& at);
  /// Methods of numbers and expressions (`x.astype(dtype)`): nullopt for other methods.
  std::optional<Value> value_method(const Value& base, const Token& method, const CallArgs& call);
  /// The converter `_tir_packed_to_unsigned_convert(storage_type, storage_nbit)` returns.
  Value make_converter(const CallArgs& maker) const;
  /// A call of a converter: (nbit, val, pos, dtype=...) with the cursor on the '('.
  Expr convert_call(const Value& converter, const Token& at);
  /// Reads `(args...)` with keywords; the cursor is on the '('.
  CallArgs parse_call_args(const std::string& callee, const Token& at);

 public:
  /// The arguments by parameter: `names` in positional order, the first `required` required.
  std::vector<const Arg*> bind_args(const CallArgs& call, const std::vector<std::string>& names,
                                    size_t required) const;
  [[noreturn]] void wrong_kind(const CallArgs& call, const Arg& arg, const std::string& param,
                               const std::string& wanted) const;
  /// A user error when `arg` is a view (only T.copy and indexing take views).
  void refuse_view(const CallArgs& call, const Arg& arg) const;
  Buffer arg_buffer(const CallArgs& call, const Arg& arg, const std::string& param) const;
  BufferRegion arg_region(const CallArgs& call, const Arg& arg, const std::string& param) const;
  Expr arg_expr(const CallArgs& call, const Arg& arg, const std::string& param) const;
  int64_t arg_int(const CallArgs& call, const Arg& arg, const std::string& param, int64_t lo,
                  int64_t hi) const;
  bool arg_bool(const CallArgs& call, const Arg& arg, const std::string& param) const;
  DataType arg_dtype(const CallArgs& call, const Arg& arg, const std::string& param) const;
  std::string arg_string(const CallArgs& call, const Arg& arg, const std::string& param) const;
  std::vector<int> arg_int_list(const CallArgs& call, const Arg& arg,
                                const std::string& param) const;
  std::vector<Expr> arg_shape(const CallArgs& call, const Arg& arg, const std::string& param) const;

  // ---- kernel_parser_stmts.cpp: blocks, statement dispatch, assignments -------------------
 private:
  /// Reads ':' and a block in a scope of its own.
  Stmt parse_suite(Context context);
  /// Reads ':' and a block into the enclosing block's statements and scope.
  void parse_block_into(std::vector<Stmt>& out, std::vector<size_t>& lets);
  void parse_statements_until_dedent(std::vector<Stmt>& out, std::vector<size_t>& lets);
  /// One statement; `lets` records the positions in `out` of let bindings (see fold_lets).
  void parse_statement(std::vector<Stmt>& out, std::vector<size_t>& lets);
  void parse_simple_statement(std::vector<Stmt>& out, std::vector<size_t>& lets);
  void end_of_simple_statement();
  /// Wraps the statements after each let into its body.
  Stmt fold_lets(std::vector<Stmt> stmts, const std::vector<size_t>& lets) const;
  [[noreturn]] void unsupported(const Token& at) const;
  void require_kernel_body(const Token& at, const std::string& what) const;
  void count_statement(const Token& at);
  /// T.get_thread_binding(dim) at `at`: creates the kernel's linear thread index on first use
  /// (named `name` when it is a 1-d block's index bound to a name).
  Expr thread_binding_of(const Token& at, int dim, const std::string& name = "");
  /// T.get_block_binding(dim) at `at`: the block index along `dim` (0 where the grid has none).
  Expr block_binding_of(const Token& at, int dim);
  void parse_assignment(std::vector<Stmt>& out, std::vector<size_t>& lets);
  /// Assigns `value` to the target at the cursor (a name, an element, names with commas);
  /// stops before the '=' that ends the target.
  void assign_target(const Value& value, const Token& value_at, std::vector<Stmt>& out,
                     std::vector<size_t>& lets);
  /// `x: annotation` and `x: annotation = value`.
  void parse_annotated(std::vector<Stmt>& out, std::vector<size_t>& lets);
  /// `assert cond[, message]`: constant conditions are checked now, conditions on symbolic sizes
  /// before a run.
  void parse_assert();
  /// `A: T.Tensor(shape, dtype)` (or `T.Tensor[shape, dtype]`) declaring a tensor parameter of an
  /// eager @tilelang.jit function, with the cursor after the ':'. False (cursor unmoved) for
  /// other annotations.
  bool declare_tensor(const Token& name, const Token& at);
  /// `X = T.alloc_*(...)`, `tx = T.get_thread_binding()`, `N = T.dynamic("N")`.
  bool parse_special_assignment(const Token& target, std::vector<Stmt>& out);
  void assign_name(const Token& target, Value value, std::vector<Stmt>& out,
                   std::vector<size_t>& lets);
  std::vector<Expr> parse_store_indices(const Buffer& buffer, const Token& at);
  Stmt make_store(const Buffer& buffer, std::vector<Expr> indices, Expr value, const Token& at);
  void parse_augmented(std::vector<Stmt>& out, const std::string& op);

  // ---- kernel_parser_control.cpp: loops, if, the launch, return, calls, macros -----------
  void parse_for(std::vector<Stmt>& out);
  void parse_if(std::vector<Stmt>& out, std::vector<size_t>& lets);
  void parse_with(std::vector<Stmt>& out);
  void parse_return();
  void parse_call_statement(std::vector<Stmt>& out);
  void inline_macro(const MacroDef& macro, const CallArgs& call, std::vector<Stmt>& out);

  // ---- kernel_parser_ops.cpp: tile operators, allocations, thread-level calls ------------
  bool parse_operator(const CallArgs& call, std::vector<Stmt>& out);
  /// T.im2col / T.c2d_im2col as the T.Parallel gather loop it means (kernel_parser_im2col.cpp).
  void parse_im2col(const CallArgs& call, std::vector<Stmt>& out);

  // ---- kernel_parser_views.cpp: T.Tensor(shape, dtype, A.data) views -------------------
  /// A view of a global tensor under another shape (same dtype, same element count): a buffer
  /// of the front end that finish_kernel maps back onto the tensor (view_accesses).
  Value make_view(const CallArgs& call);
  /// The tensor `b` views, or nullptr when `b` is no view.
  const Buffer* view_base(const Buffer& b) const;
  /// T.copy with a view operand: the element loop the copy means, over the view's indices.
  Stmt view_copy(const CallArgs& call, const BufferRegion& src, const BufferRegion& dst) const;
  /// Rewrites every access of a view into an access of the tensor it views.
  Stmt view_accesses(const Stmt& body) const;
  Buffer parse_alloc(const CallArgs& call, const std::string& name, std::vector<Stmt>& out);
  /// A call of a T.<instruction>; `id` names the instruction for TileLang's aliases
  /// (T.barrier_wait is T.mbarrier_wait_parity).
  Stmt parse_intrinsic(const CallArgs& call, std::optional<IntrinsicId> id = std::nullopt);
  void parse_annotate_layout(const Token& at, std::vector<Stmt>& out);

  // ---- kernel_parser_hopper.cpp: mbarriers and warp specialisation (sm90) -----------------
  /// `name = T.alloc_barrier(arrive_count)`: a shared buffer of barriers, each initialised by
  /// thread 0 with its count, then T.sync_threads() (as TileLang does at the kernel's start).
  Buffer parse_alloc_barrier(const CallArgs& call, const std::string& name, std::vector<Stmt>& out);
  /// TileLang's aliases of the mbarrier and register calls (T.barrier_wait, T.barrier_arrive,
  /// T.inc_max_nreg, T.dec_max_nreg) and T.tma_copy; false for other names.
  bool parse_hopper_alias(const CallArgs& call, std::vector<Stmt>& out);
  /// `with T.ws(g, ...)`: the condition "the thread is in warpgroup g (or ...)" (128 threads each).
  Expr warp_group_condition(const CallArgs& call);
  /// `T.tma_copy(src, dst, barrier=bar)`: the first thread of the enclosing T.ws group (thread 0
  /// outside one) announces the box's bytes (T.mbarrier_expect_tx) and issues T.tma_load_<r>d.
  void parse_tma_copy(const CallArgs& call, std::vector<Stmt>& out);
  /// The store half of T.tma_copy (shared region `src` -> global region `dst`, box `box`).
  void parse_tma_store(const CallArgs& call, const BufferRegion& src, const BufferRegion& dst,
                       const std::vector<int64_t>& box, std::vector<Stmt>& out);

  // ---- kernel_parser_host_calls.cpp: the values the file's host code passes to a def ---------
 public:
  /// A value the host code passes and the call that passes it.
  struct HostArgument {
    Value value;
    Token call;
  };
  /// The first call of a def in the host code whose every argument Tessel can evaluate.
  struct HostCall {
    bool found = false;
    Token at;
    std::vector<Value> positional;
    std::map<std::string, Value> keywords;
    std::string why;  ///< why the first call that could not be used could not (else empty)
  };

 private:
  /// The value the file's own host code passes for parameter `index` (`name`) of the top-level
  /// def `function` in host_call(function); nullopt when that call leaves it to its default or
  /// there is no such call (`why` then says why a call found could not be used).
  std::optional<HostArgument> host_argument(const std::string& function, size_t index,
                                            const std::string& name, std::string* why = nullptr,
                                            int depth = 0);
  const HostCall& host_call(const std::string& function, int depth);
  /// The names a call at token `call` sees: the host def around it (its parameters, from its
  /// own callers or defaults) and the host assignments before the call, run in order.
  std::shared_ptr<NameScope> host_scope_at(size_t call, int depth);
  /// Binds argparse's namespace for `NAME = PARSER.parse_args()` at the cursor in `scope`;
  /// false when the statement is something else.
  bool bind_argparse_namespace(const std::shared_ptr<NameScope>& scope);
  /// Token positions of the file's top-level statements, in order.
  const std::vector<size_t>& top_level_statements();

  // ---- kernel_parser_layouts.cpp: TileLang's layout makers in T.annotate_layout ---------------
  /// True at `maker(` or `tilelang.layout.maker(` for one of TileLang's public layout makers.
  bool at_layout_maker() const;
  /// Reads the maker's call and builds its layout for the buffer it is given.
  std::variant<Layout, Fragment> parse_layout_maker();
  /// The byte offset of a token in the source.
  size_t offset_of(const Token& t) const;

  // ---- state -------------------------------------------------------------------------------
  const std::string& source_;
  std::string path_;
  std::map<std::string, std::string> defines_;
  TokenCursor main_cursor_;
  TokenCursor* cur_;
  int no_eval_ = 0;  ///< > 0 while reading an operand Python would not evaluate

  std::shared_ptr<NameScope> scope_;
  std::shared_ptr<NameScope> module_scope_;     ///< the file's top level (host code reads it)
  std::vector<size_t> top_level_;               ///< see top_level_statements()
  std::map<std::string, HostCall> host_calls_;  ///< host_call's answers, by def
  Context context_ = Context::kModule;
  std::map<std::string, TensorDirective> tensor_directives_;
  ParsedKernel result_;
  std::vector<KernelEntry> entries_;  ///< the file's kernels, in order
  std::string kernel_choice_;         ///< --kernel NAME
  size_t def_start_ = 0;              ///< where the def being read starts (its first decorator)
  bool have_generator_ = false;
  Value generator_result_;  ///< what the enclosing def returned

  // The kernel being built.
  KernelNode node_;
  std::string kernel_name_;
  bool launched_ = false;
  Token launch_token_;
  std::vector<Var> dynamic_vars_;
  std::set<const BufferNode*> var_buffers_;        ///< T.alloc_var buffers, read and written bare
  std::vector<Buffer> empty_tensors_;              ///< made by T.empty, in order
  std::vector<std::string> returned_;              ///< the tensors the kernel function returns
  std::map<std::string, size_t> pending_tensors_;  ///< parameters declared in the body, by slot
  std::vector<Buffer>* declared_ = nullptr;        ///< the kernel function's tensor slots
  std::map<const BufferNode*, Buffer> views_;      ///< view buffers -> the tensors they view
  std::vector<Stmt> hoisted_allocs_;               ///< buffers the front end adds, allocated first
  std::vector<Buffer> scratch_;           ///< T.alloc_global tensors of the kernel, in order
  std::vector<KernelNode> launch_nodes_;  ///< the kernel's finished T.Kernel launches, in order

  int block_depth_ = 0;
  int ws_first_thread_ = 0;  ///< the first thread of the enclosing `with T.ws(...)` (else 0)
  int let_depth_ = 0;
  int macro_depth_ = 0;
  int64_t statements_ = 0;
};

/// A token standing for a position of the source, for errors outside the token stream.
inline Token token_at(int line, int column) {
  Token t;
  t.line = line;
  t.column = column;
  return t;
}

/// "1 argument", "2 arguments".
inline std::string plural(size_t n, const char* word) {
  return std::to_string(n) + " " + word + (n == 1 ? "" : "s");
}

inline bool opens_bracket(const Token& t) {
  return t.kind == TokenKind::kOp && (t.text == "(" || t.text == "[" || t.text == "{");
}
inline bool closes_bracket(const Token& t) {
  return t.kind == TokenKind::kOp && (t.text == ")" || t.text == "]" || t.text == "}");
}

/// True for Python's keywords (which cannot name anything).
bool is_keyword(const std::string& word);

/// A parameter's value as -D would spell it.
std::string define_text(const Value& v);

/// The names of T.const("M, N") or T.const("B S H").
std::vector<std::string> split_const_names(const std::string& text);

/// The module name as the parser spells it: tilelang.language (and its submodules) is T.
std::string module_name(const std::string& dotted);

/// The message for a TileLang construct Tessel refuses by name (Hopper warp specialisation,
/// Blackwell tensor memory, ...), naming what is supported instead; nullopt for other names.
/// `norm` is normalised (`T.alloc_barrier`). Defined in core/kernel_parser_refusals.cpp.
std::optional<std::string> refusal_of(const std::string& norm);
/// True for the functions call_builtin_function knows (T.min, T.exp2, T.float16, ...).
bool is_builtin_function(const std::string& name);

/// Binds Python's built-in functions (float, int, len, min, max, ...) in `scope`.
void bind_python_builtins(NameScope& scope);

// ---- kernel_parser_pyops.cpp: Python's operators on constants --------------------------------
// Each throws a UserError (without location) when the operands do not support the operator.

/// The value of a constant Python integer (an int32, int64 or bool literal).
std::optional<int64_t> py_int(const Value& v);
/// True for a constant Python float (a float32 literal).
bool py_float(const Value& v);
bool py_number(const Value& v);
/// Python's truth of a constant; nullopt for an expression of variables.
std::optional<bool> py_truth(const Value& v);
/// `a OP b` for + - * / // % ** << >> & | ^ @.
Value py_binary(const std::string& op, const Value& a, const Value& b);
Value py_equal(const Value& a, const Value& b);
/// `a OP b` for == != < <= > >= in, not in, is, is not.
Value py_compare(const std::string& op, const Value& a, const Value& b);
Value py_negate(const Value& v);
Value py_invert(const Value& v);
Value py_not(const Value& v);
Value py_bool(bool b);
Value py_float_value(double d);

/// `hi - lo` as the extent of a loop or slice, simplified so that the printer's `lo:lo + extent`
/// and `T.serial(lo, lo + extent)` read back to `extent`.
Expr extent_between(const Expr& lo, const Expr& hi);

/// True when `e` nests deeper than `limit` (its recorded height; constant time).
bool expr_deeper_than(const Expr& e, int limit);

/// The closest name to `name` among `candidates` within two edits, or "".
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace tessel::kernel_parser_detail
