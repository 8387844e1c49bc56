#include "cli/npy.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.h"
#include "ops/api.h"

namespace kiln::cli {

namespace {

struct Descr {
  const char* text;
  DType dtype;
  size_t bytes;
};
constexpr Descr kDescrs[] = {{"<f4", DType::F32, 4}, {"<f8", DType::F64, 8}, {"<f2", DType::F16, 2},
                             {"<i4", DType::I32, 4}, {"<i8", DType::I64, 8}, {"|b1", DType::Bool, 1}};

}  // namespace

Tensor read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open '" + path + "': " + std::strerror(errno));
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string s = ss.str();
  auto bad = [&](const std::string& why) { return Error("'" + path + "' is not a .npy file kiln reads: " + why); };
  if (s.size() < 10 || s.compare(0, 6, "\x93NUMPY") != 0) throw bad("no NumPy magic");
  const int major = static_cast<unsigned char>(s[6]);
  size_t header_len = 0, at = 0;
  if (major == 1) {
    header_len = size_t(static_cast<unsigned char>(s[8])) | size_t(static_cast<unsigned char>(s[9])) << 8, at = 10;
  } else if (major == 2 || major == 3) {
    if (s.size() < 12) throw bad("truncated header");
    for (int i = 0; i < 4; ++i) header_len |= size_t(static_cast<unsigned char>(s[size_t(8 + i)])) << (8 * i);
    at = 12;
  } else {
    throw bad("format version " + std::to_string(major));
  }
  if (s.size() < at + header_len) throw bad("truncated header");
  const std::string header = s.substr(at, header_len);
  std::smatch md, mf, ms;
  if (!std::regex_search(header, md, std::regex("'descr':\\s*'([^']*)'")) ||
      !std::regex_search(header, mf, std::regex("'fortran_order':\\s*(True|False)")) ||
      !std::regex_search(header, ms, std::regex("'shape':\\s*\\(([^)]*)\\)"))) {
    throw bad("a header without descr, fortran_order and shape");
  }
  if (mf[1] == "True") throw bad("Fortran order; save it with numpy.ascontiguousarray");
  const Descr* d = nullptr;
  for (const Descr& x : kDescrs) {
    if (md[1] == x.text) d = &x;
  }
  if (!d) throw bad("dtype '" + md[1].str() + "'; kiln reads <f2 <f4 <f8 <i4 <i8 |b1");
  // NumPy's tuple of sizes: "", "3,", "2, 3" (trailing comma optional past one entry).
  std::vector<int64_t> shape;
  const std::string dims = ms[1];
  if (!std::regex_match(dims, std::regex("\\s*(\\d+\\s*(,\\s*\\d+\\s*)*,?\\s*)?"))) {
    throw bad("a shape that is not a tuple of sizes: (" + dims + ")");
  }
  const std::regex number("\\d+");
  for (std::sregex_iterator it(dims.begin(), dims.end(), number), end; it != end; ++it) {
    if (it->str().size() > 12) throw bad("a size of " + it->str() + " elements");
    shape.push_back(std::stoll(it->str()));
  }
  // The data must be in the file before anything is allocated for it (a 100-byte file
  // may claim 2^30 elements).
  const size_t data = at + header_len, have = s.size() - data;
  uint64_t count = 1;
  for (int64_t n : shape) {
    if (n != 0 && count > (uint64_t(1) << 40) / uint64_t(n)) throw bad("a shape of more than 2^40 elements");
    count *= uint64_t(n);
  }
  if (count * d->bytes > have) {
    throw bad("its data ends early (" + std::to_string(have) + " of " + std::to_string(count * d->bytes) + " bytes)");
  }
  Tensor t(d->dtype, shape);
  const size_t bytes = size_t(t.numel()) * d->bytes;
  if (bytes) std::memcpy(t.mutable_data(), s.data() + data, bytes);
  return t;
}

void write_npy(const std::string& path, const Tensor& value) {
  Tensor t = value.to_host();
  if (t.dtype() == DType::BF16) t = cast(t, DType::F32);
  const Descr* d = nullptr;
  for (const Descr& x : kDescrs) {
    if (x.dtype == t.dtype()) d = &x;
  }
  // NumPy's tuple: "()", "(3,)", "(2, 3)".
  std::string shape;
  for (int i = 0; i < t.shape().rank(); ++i) shape += (i ? ", " : "") + std::to_string(t.shape()[i].size);
  if (t.shape().rank() == 1) shape += ",";
  std::string header = std::string("{'descr': '") + d->text + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) throw Error("cannot write '" + path + "': " + std::strerror(errno));
  f.write("\x93NUMPY\x01\x00", 8);
  const char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
  f.write(len, 2);
  f << header;
  f.write(static_cast<const char*>(t.data()), std::streamsize(size_t(t.numel()) * d->bytes));
  if (!f) throw Error("writing '" + path + "' failed: " + std::strerror(errno));
}

}  // namespace kiln::cli
