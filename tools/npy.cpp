// .npy parsing and writing (the header is a Python dict literal with three keys), and .npz
// archives read through libzip.
#include "tools/npy.h"

#include <zip.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include "interp/host_tensor.h"
#include "tools/cli.h"
#include "tools/file_io.h"

namespace tessel::cli {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

/// Reads the header dict `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }`.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& origin) : s_(text), origin_(origin) {}

  NpyArray parse() {
    NpyArray a;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{');
    while (!peek('}')) {
      std::string key = quoted();
      expect(':');
      if (key == "descr") {
        if (peek('[')) fail("structured arrays (a list of fields) are not supported");
        a.descr = quoted();
        has_descr = true;
      } else if (key == "fortran_order") {
        a.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape") {
        a.shape = shape();
        has_shape = true;
      } else {
        fail("unknown header key '" + key + "'");
      }
      if (!peek('}')) expect(',');
    }
    if (!has_descr || !has_order || !has_shape)
      fail("the header lacks one of 'descr', 'fortran_order', 'shape'");
    return a;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError(origin_ + ": malformed .npy header (" + why + ")");
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string quoted() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("expected a string");
    char q = s_[pos_++];
    size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string v(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return v;
  }
  bool boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      std::string_view w(word);
      if (s_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        return value;
      }
    }
    fail("fortran_order is neither True nor False");
  }
  std::vector<int64_t> shape() {
    std::vector<int64_t> dims;
    expect('(');
    while (!peek(')')) {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
      if (ec != std::errc() || v < 0) fail("a shape entry is not a non-negative integer");
      pos_ = end - s_.data();
      dims.push_back(v);
      if (!peek(')')) expect(',');
    }
    ++pos_;
    return dims;
  }

  std::string_view s_;
  const std::string& origin_;
  size_t pos_ = 0;
};

uint32_t little_endian(std::string_view bytes) {
  uint32_t v = 0;
  for (size_t i = 0; i < bytes.size(); ++i) v |= uint32_t(uint8_t(bytes[i])) << (8 * i);
  return v;
}

std::string read_file(const std::string& path, const std::string& origin) {
  return read_bounded(path, host_memory_budget(), origin);
}

}  // namespace

int npy_itemsize(std::string_view descr) {
  if (descr.size() < 3) return 0;
  int size = 0;
  auto [end, ec] = std::from_chars(descr.data() + 2, descr.data() + descr.size(), size);
  return ec == std::errc() && end == descr.data() + descr.size() ? size : 0;
}

NpyArray parse_npy(std::string_view data, const std::string& origin) {
  if (data.substr(0, kMagic.size()) != kMagic || data.size() < 10) {
    throw UsageError(origin + ": not a .npy file (it does not start with NumPy's magic bytes)");
  }
  int major = uint8_t(data[6]);
  size_t len_bytes = major == 1 ? 2 : major == 2 || major == 3 ? 4 : 0;
  if (len_bytes == 0) {
    throw UsageError(origin + ": .npy format version " + std::to_string(major) +
                     " is not supported (versions 1, 2 and 3 are)");
  }
  size_t start = 8 + len_bytes;
  if (data.size() < start) throw UsageError(origin + ": the .npy file ends inside its header");
  size_t header_len = little_endian(data.substr(8, len_bytes));
  if (data.size() < start + header_len) {
    throw UsageError(origin + ": the .npy file ends inside its header");
  }
  NpyArray a = HeaderParser(data.substr(start, header_len), origin).parse();
  int itemsize = npy_itemsize(a.descr);
  if (itemsize <= 0 || a.descr[1] == 'O') {
    throw UsageError(origin + ": dtype '" + a.descr +
                     "' holds no plain numbers (object or unsized arrays are not supported)");
  }
  double elements = 1;
  for (int64_t d : a.shape) elements *= static_cast<double>(d);
  size_t have = data.size() - start - header_len;
  if (elements * itemsize > static_cast<double>(have)) {
    throw UsageError(origin + ": the .npy file is truncated: its shape needs " +
                     std::to_string(static_cast<int64_t>(elements * itemsize)) +
                     " bytes of data, it has " + std::to_string(have));
  }
  size_t need = static_cast<size_t>(elements) * itemsize;
  const char* begin = data.data() + start + header_len;
  a.bytes.assign(begin, begin + need);
  return a;
}

NpyArray read_npy(const std::string& path, const std::string& origin) {
  return parse_npy(read_file(path, origin), origin);
}

std::map<std::string, NpyArray> read_npz(const std::string& path, const std::string& origin) {
  int error = 0;
  std::unique_ptr<zip_t, int (*)(zip_t*)> archive(zip_open(path.c_str(), ZIP_RDONLY, &error),
                                                  zip_close);
  if (!archive) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, error);
    std::string why = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    throw UsageError(origin + ": cannot read '" + path + "' as a .npz archive (" + why + ")");
  }
  std::map<std::string, NpyArray> arrays;
  zip_int64_t n = zip_get_num_entries(archive.get(), 0);
  const uint64_t budget = static_cast<uint64_t>(host_memory_budget());
  uint64_t total = 0;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    if (zip_stat_index(archive.get(), i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
      throw UsageError(origin + ": cannot read member " + std::to_string(i) + " of '" + path + "'");
    }
    std::string name = st.name;
    std::string member = origin + " (member " + name + ")";
    total += st.size;
    if (total > budget) {
      throw UsageError(member + ": the archive's arrays hold more than " +
                       std::to_string(budget >> 20) +
                       " MiB, three quarters of this machine's memory");
    }
    std::unique_ptr<zip_file_t, int (*)(zip_file_t*)> file(zip_fopen_index(archive.get(), i, 0),
                                                           zip_fclose);
    std::string data(st.size, '\0');
    if (!file || zip_fread(file.get(), data.data(), st.size) != zip_int64_t(st.size)) {
      throw UsageError(member + ": cannot read it (" + zip_strerror(archive.get()) + ")");
    }
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
      name.resize(name.size() - 4);
    arrays.emplace(name, parse_npy(data, member));
  }
  return arrays;
}

std::string npy_file(const NpyArray& a) {
  std::string header = "{'descr': '" + a.descr +
                       "', 'fortran_order': " + (a.fortran_order ? "True" : "False") +
                       ", 'shape': (";
  for (int64_t d : a.shape) header += std::to_string(d) + ", ";
  if (a.shape.size() > 1) header.resize(header.size() - 2);  // (3,) keeps its comma
  if (a.shape.size() == 1) header.pop_back();
  header += "), }";
  // The data starts at a multiple of 64 bytes; the header ends with a newline.
  size_t total = kMagic.size() + 4 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic);
  out += '\x01';
  out += '\x00';
  out += char(header.size() & 0xFF);
  out += char(header.size() >> 8);
  out += header;
  out.append(a.bytes.begin(), a.bytes.end());
  return out;
}

void write_npy(const std::string& path, const NpyArray& array) {
  write_checked(path, npy_file(array), "--save");
}

}  // namespace tessel::cli
