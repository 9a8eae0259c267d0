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

namespace {

const HostTensor* find_tensor(const TensorMap& t, const char* name) {
  auto it = t.find(name);
  return it == t.end() ? nullptr : &it->second;
}

}  // namespace

SsdTensors::SsdTensors(const SsdShape& shape, const TensorMap& tensors)
    : s_(shape),
      x_(find_tensor(tensors, "x")),
      B_(find_tensor(tensors, "B")),
      C_(find_tensor(tensors, "C")),
      dt_(find_tensor(tensors, "dt")),
      dA_(find_tensor(tensors, "dA_cumsum")),
      prev_(find_tensor(tensors, "prev_states")) {}

void SsdTensors::x_chunk(int64_t b, int64_t c, int64_t h, MatrixD& m, int64_t positions) const {
  if (positions < 0) positions = s_.chunk;
  m.resize(positions, s_.headdim);
  for (int64_t l = 0; l < positions; ++l) {
    if (c * s_.chunk + l < s_.seq_len) {
      read_elements(*x_, ((b * s_.seq_len + c * s_.chunk + l) * s_.nheads + h) * s_.headdim,
                    s_.headdim, m.row(l).data());
    } else {
      m.row(l).setZero();
    }
  }
}

void SsdTensors::C_rows(int64_t b, int64_t c, int64_t g, const std::vector<int64_t>& rows,
                        MatrixD& m) const {
  group_rows(C_, b, c, g, rows.data(), static_cast<int64_t>(rows.size()), m);
}

void SsdTensors::group_rows(const HostTensor* t, int64_t b, int64_t c, int64_t g,
                            const int64_t* rows, int64_t n, MatrixD& m) const {
  m.resize(n, s_.dstate);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t l = rows ? rows[i] : i;
    if (c * s_.chunk + l < s_.seq_len) {
      read_elements(*t, ((b * s_.seq_len + c * s_.chunk + l) * s_.ngroups + g) * s_.dstate,
                    s_.dstate, m.row(i).data());
    } else {
      m.row(i).setZero();
    }
  }
}

void SsdTensors::state(int64_t b, int64_t c, int64_t h, MatrixD& m) const {
  m.resize(s_.headdim, s_.dstate);
  read_elements(*prev_, ((b * s_.nchunks + c) * s_.nheads + h) * s_.headdim * s_.dstate,
                s_.headdim * s_.dstate, m.data());
}

void SsdTensors::dA_chunk(int64_t b, int64_t c, int64_t h, Eigen::VectorXd& v) const {
  v.resize(s_.chunk);
  read_elements(*dA_, ((b * s_.nheads + h) * s_.nchunks + c) * s_.chunk, s_.chunk, v.data());
}

void SsdTensors::dt_chunk(int64_t b, int64_t c, int64_t h, Eigen::VectorXd& v) const {
  v.resize(s_.chunk);
  read_elements(*dt_, ((b * s_.nheads + h) * s_.nchunks + c) * s_.chunk, s_.chunk, v.data());
}

}  // namespace tessel
