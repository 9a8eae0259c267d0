// Shape parameters and chunk views of the Mamba-2 SSD examples.
#include "examples/linear_attention_shapes.h"

namespace tessel {

SsdShape SsdShape::from(const Params& p, const std::string& kernel) {
  SsdShape s{};
  s.batch = p.positive("batch");
  s.nheads = p.positive("nheads");
  s.ngroups = p.positive("ngroups");
  s.seq_len = p.positive("seq_len");
  s.chunk = p.positive("chunk_size");
  s.headdim = p.positive("headdim");
  s.dstate = p.positive("dstate");
  s.nchunks = (s.seq_len + s.chunk - 1) / s.chunk;
  if (s.nheads % s.ngroups != 0) {
    throw ParamError("kernel '" + kernel + "': nheads=" + std::to_string(s.nheads) +
                     " is not a multiple of ngroups=" + std::to_string(s.ngroups) +
                     "; each group of B and C serves nheads / ngroups heads");
  }
  return s;
}

std::vector<ParamSpec> ssd_params(std::vector<ParamSpec> blocks) {
  std::vector<ParamSpec> params = {
      {"batch", "1", "sequences"},
      {"nheads", "4", "heads"},
      {"ngroups", "1", "groups of B and C (nheads / ngroups heads share one)"},
      {"seq_len", "256", "positions per sequence"},
      {"chunk_size", "64", "positions per chunk (Q)"},
      {"headdim", "64", "head dimension (P)"},
      {"dstate", "64", "state dimension (N)"}};
  params.insert(params.end(), blocks.begin(), blocks.end());
  return params;
}

SsdTensors::SsdTensors(const SsdShape& shape, const TensorMap& tensors) : s_(shape), t_(tensors) {}

MatrixD SsdTensors::x_chunk(int64_t b, int64_t c, int64_t h) const {
  const HostTensor& x = t_.at("x");
  MatrixD m = MatrixD::Zero(s_.chunk, s_.headdim);
  for (int64_t l = 0; l < s_.chunk && c * s_.chunk + l < s_.seq_len; ++l) {
    for (int64_t p = 0; p < s_.headdim; ++p) {
      m(l, p) = x.at(((b * s_.seq_len + c * s_.chunk + l) * s_.nheads + h) * s_.headdim + p);
    }
  }
  return m;
}

MatrixD SsdTensors::group_chunk(const std::string& name, int64_t b, int64_t c, int64_t g) const {
  const HostTensor& t = t_.at(name);
  MatrixD m = MatrixD::Zero(s_.chunk, s_.dstate);
  for (int64_t l = 0; l < s_.chunk && c * s_.chunk + l < s_.seq_len; ++l) {
    for (int64_t n = 0; n < s_.dstate; ++n) {
      m(l, n) = t.at(((b * s_.seq_len + c * s_.chunk + l) * s_.ngroups + g) * s_.dstate + n);
    }
  }
  return m;
}

Eigen::VectorXd SsdTensors::dA_chunk(int64_t b, int64_t c, int64_t h) const {
  const HostTensor& dA = t_.at("dA_cumsum");
  Eigen::VectorXd v(s_.chunk);
  for (int64_t l = 0; l < s_.chunk; ++l)
    v[l] = dA.at(((b * s_.nheads + h) * s_.nchunks + c) * s_.chunk + l);
  return v;
}

double SsdTensors::dt_at(int64_t b, int64_t c, int64_t h, int64_t l) const {
  return t_.at("dt").at(((b * s_.nheads + h) * s_.nchunks + c) * s_.chunk + l);
}

}  // namespace tessel
