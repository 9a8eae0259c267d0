// T.im2col / T.c2d_im2col of kernel files: TileLang's 2-D convolution gather, read as the
// T.Parallel loop it stands for (on Hopper TileLang emits one TMA im2col load for it).
#include "core/expr_printer.h"
#include "core/kernel_parser_detail.h"

namespace tessel::kernel_parser_detail {

// TileLang's meaning (src/op/copy.cc, Conv2DIm2ColOp): img is an NHWC global tensor, col a
// (pixels, channels) shared tile. Tile row i is output pixel m = nhw_step * pixels + i, taken in
// (n, oh, ow) order with OH = (H + 2 pad - dilation (kernel - 1) - 1) // stride + 1 (OW alike);
// tile column j is patch element k = c_step * channels + j in (kh, kw, c) order. The element is
// img[n, oh * stride + kh * dilation - pad, ow * stride + kw * dilation - pad, c], or 0 where
// that lies outside the image (TMA's zero fill), outside the batch, or past the patch.
void Parser::parse_im2col(const CallArgs& call, std::vector<Stmt>& out) {
  const std::string& op = call.callee;
  require_kernel_body(call.at, op);
  count_statement(call.at);
  auto a = bind_args(call,
                     {"img", "col", "nhw_step", "c_step", "kernel", "stride", "dilation", "pad",
                      "eviction_policy", "annotations"},
                     8);
  Buffer img = arg_buffer(call, *a[0], "img"), col = arg_buffer(call, *a[1], "col");
  Expr nhw_step = arg_expr(call, *a[2], "nhw_step"), c_step = arg_expr(call, *a[3], "c_step");
  const int64_t kernel = arg_int(call, *a[4], "kernel", 1, 1 << 16);
  const int64_t stride = arg_int(call, *a[5], "stride", 1, 1 << 16);
  const int64_t dilation = arg_int(call, *a[6], "dilation", 1, 1 << 16);
  const int64_t pad = arg_int(call, *a[7], "pad", 0, 1 << 16);
  if (a[8]) arg_string(call, *a[8], "eviction_policy");
  if (img->scope != Scope::kGlobal || img->ndim() != 4) {
    fail(a[0]->value_at, op + ": img must be a 4-d (N, H, W, C) global tensor; '" + img->name +
                             "' is " + std::to_string(img->ndim()) + "-d " +
                             scope_name(img->scope));
  }
  if ((col->scope != Scope::kShared && col->scope != Scope::kSharedDyn) || col->ndim() != 2) {
    fail(a[1]->value_at, op + ": col must be a 2-d (pixels, channels) shared tile; '" + col->name +
                             "' is " + std::to_string(col->ndim()) + "-d " +
                             scope_name(col->scope));
  }
  if (img->dtype != col->dtype) {
    fail(a[1]->value_at, op + ": img '" + img->name + "' is " + img->dtype.name() + " but col '" +
                             col->name + "' is " + col->dtype.name() +
                             "; the gather does not convert");
  }
  auto channels = as_const_int(img->shape[3]);
  auto rows = as_const_int(col->shape[0]), cols = as_const_int(col->shape[1]);
  if (!channels || !rows || !cols || *channels % *cols != 0) {
    fail(call.at, op + ": the channel count C of '" + img->name +
                      "' must be a known multiple of col's width (as TileLang requires: each "
                      "tile takes whole channel slices of one (kh, kw)); got C = " +
                      to_string(img->shape[3]) + ", width " + to_string(col->shape[1]) +
                      "; gather the patch with a T.Parallel loop instead");
  }
  const Expr& N = img->shape[0];
  const Expr& H = img->shape[1];
  const Expr& W = img->shape[2];
  const Expr C = make_int(*channels), K = make_int(kernel);
  const int64_t reach = dilation * (kernel - 1) + 1;
  Expr OH = floordiv(H + make_int(2 * pad - reach), make_int(stride)) + make_int(1);
  Expr OW = floordiv(W + make_int(2 * pad - reach), make_int(stride)) + make_int(1);
  SourceLoc loc = loc_of(call.at);
  out.push_back(located(call.at, [&] {
    Var i("i", loop_var_type(make_int(0), make_int(*rows)));
    Var j("j", loop_var_type(make_int(0), make_int(*cols)));
    Expr m = nhw_step * make_int(*rows) + i;
    Expr k = c_step * make_int(*cols) + j;
    Expr n = floordiv(m, OH * OW);
    Expr h = floormod(floordiv(m, OW), OH) * make_int(stride) +
             floordiv(k, C * K) * make_int(dilation) - make_int(pad);
    Expr w = floormod(m, OW) * make_int(stride) + floormod(floordiv(k, C), K) * make_int(dilation) -
             make_int(pad);
    Expr inside = h >= make_int(0) && h < H && w >= make_int(0) && w < W && n < N &&
                  k < make_int(kernel * kernel * *channels);
    Expr value = if_then_else(inside, BufferLoadNode::make(img, {n, h, w, floormod(k, C)}),
                              make_const(col->dtype, 0));
    Stmt body = StoreNode::make(col, {i, j}, value, loc);
    body = ForNode::make(j, make_int(0), make_int(*cols), ForKind::kParallel, body, loc);
    return ForNode::make(i, make_int(0), make_int(*rows), ForKind::kParallel, body, loc);
  }));
}

}  // namespace tessel::kernel_parser_detail
