// The example registry and typed parameter access.
#include "examples/registry.h"

#include <charconv>

#include "core/error.h"
#include "examples/bugs/thread_examples.h"

namespace tessel {

const std::string& Params::text(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end())
    internal_error("kernel '" + kernel_ + "' has no parameter '" + name + "'");
  return it->second;
}

int64_t Params::integer(const std::string& name) const {
  const std::string& s = text(name);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) {
    throw ParamError("kernel '" + kernel_ + "': parameter " + name + "=" + s +
                     " is not an integer; give e.g. -D " + name + "=128");
  }
  return v;
}

int64_t Params::positive(const std::string& name) const {
  int64_t v = integer(name);
  if (v < 1) {
    throw ParamError("kernel '" + kernel_ + "': parameter " + name + "=" + std::to_string(v) +
                     " must be at least 1");
  }
  return v;
}

DataType Params::dtype(const std::string& name) const {
  const std::string& s = text(name);
  auto t = DataType::parse(s);
  if (!t) {
    throw ParamError("kernel '" + kernel_ + "': parameter " + name + "=" + s +
                     " is not a data type; use one of " + DataType::accepted_names());
  }
  return *t;
}

bool Params::boolean(const std::string& name) const {
  const std::string& s = text(name);
  if (s == "1" || s == "true" || s == "True") return true;
  if (s == "0" || s == "false" || s == "False") return false;
  throw ParamError("kernel '" + kernel_ + "': parameter " + name + "=" + s +
                   " is not a boolean; use true or false");
}

const std::vector<Example>& examples() {
  static const std::vector<Example> all = [] {
    std::vector<Example> list = {gemm_example(),           gemm_transpose_b_example(),
                                 gemm_rs_example(),        softmax_example(),
                                 elementwise_example(),    dequant_gemm_example(),
                                 flash_attention_example()};
    list.push_back(chunk_state_example());
    list.push_back(chunk_scan_example());
    list.push_back(linear_attention_example());
    list.push_back(mla_decode_example());
    list.push_back(mla_decode_split_example());
    list.push_back(gemm_splitk_example());
    for (Example& e : thread_level_examples()) list.push_back(std::move(e));
    for (Example& e : dequant_family_examples()) list.push_back(std::move(e));
    return list;
  }();
  return all;
}

const Example* find_example(const std::string& name) {
  for (const Example& e : examples()) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

Params make_params(const Example& example, const std::map<std::string, std::string>& defines) {
  std::map<std::string, std::string> values;
  for (const ParamSpec& p : example.params) values[p.name] = p.default_value;
  for (const auto& [name, value] : defines) {
    if (!values.count(name)) {
      std::string known;
      for (const ParamSpec& p : example.params) known += (known.empty() ? "" : ", ") + p.name;
      user_error("kernel '" + example.name + "' has no parameter '" + name +
                 "'; its parameters are " + known);
    }
    values[name] = value;
  }
  return Params(example.name, std::move(values));
}

}  // namespace tessel
