#include "samplecheck/suites/row_source.h"
#include "samplecheck/core/splitmix.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <numbers>
#include <sstream>

#include "samplecheck/core/files.h"
#include "samplecheck/core/format.h"
#include "samplecheck/reference/logits.h"
#include "samplecheck/suites/json_text.h"

namespace samplecheck::harness {
namespace {

// The deterministic stream of a row: splitmix64 outputs, uniforms in (0, 1) from their top 53 bits.
class Stream {
 public:
  explicit Stream(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    const uint64_t out = SplitMix64(state_);  // the standard splitmix64 sequence
    state_ += 0x9E3779B97F4A7C15ULL;
    return out;
  }
  double Uniform() { return (static_cast<double>(Next() >> 11) + 0.5) * 0x1.0p-53; }
  // Box-Muller, one normal per call (the second is discarded so each draw consumes exactly two words).
  double Normal() {
    const double u1 = Uniform();
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
  double Gumbel() { return -std::log(-std::log(Uniform())); }
  // Uniform integer in [0, n) by multiply-shift of the top 32 bits (n <= 2^32; bias below 2^-32 * n).
  uint64_t Below(uint64_t n) { return ((Next() >> 32) * n) >> 32; }

 private:
  uint64_t state_;
};

constexpr int64_t kMaxVocab = int64_t{1} << 24;

Status CheckVocab(const RowSpec& spec, int64_t min_vocab = 1) {
  if (spec.vocab < min_vocab || spec.vocab > kMaxVocab) {
    return InvalidArgument("row " + spec.kind + ": vocab = " + std::to_string(spec.vocab) + " is outside [" +
                           std::to_string(min_vocab) + ", " + std::to_string(kMaxVocab) + "]");
  }
  return Status::Ok();
}

Status CheckPositive(const RowSpec& spec, const char* name, double value) {
  if (!(value > 0.0) || !std::isfinite(value)) {
    std::ostringstream os;
    os << "row " << spec.kind << ": " << name << " = " << value << " must be positive and finite";
    return InvalidArgument(os.str());
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<double>> DyadicVector(const std::string& name) {
  if (name == "V1" || name == "V3") return std::vector<double>{0.5, 0.375, 0.125};
  if (name == "V2") return std::vector<double>{0.25, 0.25, 0.25, 0.25};
  if (name == "V2'" || name == "V2p") return std::vector<double>{0.4, 0.3, 0.3};
  if (name == "V4") return std::vector<double>{0.4, 0.3, 0.2, 0.1};
  if (name == "V5") {
    std::vector<double> v{0.35, 0.25, 0.20, 0.05, 0.03};
    v.insert(v.end(), 12, 0.01);
    return v;
  }
  return InvalidArgument("dyadic vector \"" + name + "\" is unknown (known: V1, V2, V2', V3, V4, V5)");
}

Result<RowSpec> ParseRowSpec(const nlohmann::json& json) {
  if (!json.is_object()) return ParseError("a row must be a JSON object with a \"kind\"");
  RowSpec spec;
  static const char* const kKnown[] = {"kind",    "vocab",  "sigma",        "exponent",     "scale",
                                       "levels",  "spacing", "vector",      "probs",        "head",
                                       "tail_min_gap", "tail_max_gap", "path", "row", "mask_fraction", "poison"};
  for (const auto& [key, value] : json.items()) {
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
      return ParseError("row: unknown field \"" + key + "\"");
    }
  }
  try {
    if (!json.contains("kind") || !json["kind"].is_string()) return ParseError("row: \"kind\" (a string) is missing");
    spec.kind = json["kind"].get<std::string>();
    auto num = [&](const char* key, double& out) {
      if (json.contains(key)) {
        if (!json[key].is_number()) throw std::runtime_error(std::string("\"") + key + "\" must be a number");
        out = json[key].get<double>();
      }
    };
    auto integer = [&](const char* key, int64_t& out) {
      if (json.contains(key)) {
        if (!json[key].is_number_integer()) throw std::runtime_error(std::string("\"") + key + "\" must be an integer");
        out = json[key].get<int64_t>();
      }
    };
    integer("vocab", spec.vocab);
    num("sigma", spec.sigma);
    num("exponent", spec.exponent);
    num("scale", spec.scale);
    integer("levels", spec.levels);
    num("spacing", spec.spacing);
    integer("head", spec.head);
    num("tail_min_gap", spec.tail_min_gap);
    num("tail_max_gap", spec.tail_max_gap);
    integer("row", spec.row);
    num("mask_fraction", spec.mask_fraction);
    if (json.contains("vector")) spec.vector = json["vector"].get<std::string>();
    if (json.contains("path")) spec.path = json["path"].get<std::string>();
    if (json.contains("probs")) spec.probs = json["probs"].get<std::vector<double>>();
    if (json.contains("poison")) {
      spec.poison = json["poison"].get<std::string>();
      if (spec.poison != "nan" && spec.poison != "all_nan" && spec.poison != "all_masked") {
        throw std::runtime_error("\"poison\" = \"" + spec.poison + "\" (allowed: nan, all_nan, all_masked)");
      }
    }
  } catch (const std::exception& e) {
    return ParseError("row " + spec.kind + ": " + JsonErrorText(e));
  }
  if (spec.kind == "near_flat" && !json.contains("sigma")) spec.sigma = 1e-3;
  if (spec.kind == "many_tail" && !json.contains("vocab")) spec.vocab = 131072;
  if (spec.kind == "dyadic" && spec.vector.empty() && spec.probs.empty()) {
    return ParseError("row dyadic: give \"vector\" (V1..V5) or \"probs\"");
  }
  if (spec.kind == "npy" && spec.path.empty()) return ParseError("row npy: \"path\" is missing");
  static const char* const kKinds[] = {"gaussian", "zipf", "gumbel", "near_flat", "tied", "dyadic", "many_tail", "npy"};
  if (std::find(std::begin(kKinds), std::end(kKinds), spec.kind) == std::end(kKinds)) {
    return ParseError("row: unknown kind \"" + spec.kind +
                      "\" (known: gaussian, zipf, gumbel, near_flat, tied, dyadic, many_tail, npy)");
  }
  return spec;
}

nlohmann::json RowSpecToJson(const RowSpec& spec) {
  nlohmann::json j;
  j["kind"] = spec.kind;
  const std::string& k = spec.kind;
  if (k != "dyadic" && k != "npy") j["vocab"] = spec.vocab;
  if (k == "gaussian" || k == "near_flat") j["sigma"] = spec.sigma;
  if (k == "zipf") j["exponent"] = spec.exponent;
  if (k == "gumbel") j["scale"] = spec.scale;
  if (k == "tied") {
    j["levels"] = spec.levels;
    j["spacing"] = spec.spacing;
  }
  if (k == "dyadic") {
    if (!spec.vector.empty()) j["vector"] = spec.vector;
    if (!spec.probs.empty()) j["probs"] = spec.probs;
  }
  if (k == "many_tail") {
    j["head"] = spec.head;
    j["tail_min_gap"] = spec.tail_min_gap;
    j["tail_max_gap"] = spec.tail_max_gap;
  }
  if (k == "npy") {
    j["path"] = spec.path;
    j["row"] = spec.row;
  }
  if (spec.mask_fraction > 0.0) j["mask_fraction"] = spec.mask_fraction;
  if (!spec.poison.empty()) j["poison"] = spec.poison;
  return j;
}

std::string DescribeRowSpec(const RowSpec& spec) {
  const std::string& k = spec.kind;
  std::string s = k + "(";
  if (k == "dyadic") {
    s += spec.vector.empty() ? "probs[" + std::to_string(spec.probs.size()) + "]" : spec.vector;
  } else if (k == "npy") {
    s += spec.path + ", row " + std::to_string(spec.row);
  } else {
    s += "V=" + std::to_string(spec.vocab);
    if (k == "gaussian" || k == "near_flat") s += ", sigma=" + FormatSignificant(spec.sigma);
    if (k == "zipf") s += ", s=" + FormatSignificant(spec.exponent);
    if (k == "gumbel") s += ", scale=" + FormatSignificant(spec.scale);
    if (k == "tied") s += ", levels=" + std::to_string(spec.levels);
    if (k == "many_tail") {
      s += ", head=" + std::to_string(spec.head) + ", gaps " + FormatSignificant(spec.tail_min_gap) + ".." +
           FormatSignificant(spec.tail_max_gap);
    }
  }
  if (spec.mask_fraction > 0.0) s += ", masked " + FormatSignificant(spec.mask_fraction);
  if (!spec.poison.empty()) s += ", poison " + spec.poison;
  return s + ")";
}

namespace {

Result<std::vector<float>> DyadicRow(const RowSpec& spec) {
  std::vector<float> row;
  std::vector<double> probs = spec.probs;
  if (probs.empty()) {
    auto v = DyadicVector(spec.vector);
    if (!v.ok()) return v.error();
    probs = *v;
  }
  for (double p : probs) {
    if (!(p > 0.0) || !std::isfinite(p)) {
      return InvalidArgument("row dyadic: probability " + FormatSignificant(p) +
                             " must be positive (use mask_fraction "
                             "for -inf tokens)");
    }
  }
  for (double p : probs) row.push_back(static_cast<float>(std::log(p)));
  return row;
}

Result<std::vector<float>> ManyTailRow(const RowSpec& spec, Stream& rng) {
  std::vector<float> row;
  if (Status st = CheckVocab(spec, 2); !st.ok()) return st;
  if (spec.head < 1 || spec.head >= spec.vocab) {
    return InvalidArgument("row many_tail: head = " + std::to_string(spec.head) + " is outside [1, vocab)");
  }
  if (!(spec.tail_min_gap >= 0.0 && spec.tail_max_gap >= spec.tail_min_gap && std::isfinite(spec.tail_max_gap))) {
    return InvalidArgument("row many_tail: need 0 <= tail_min_gap <= tail_max_gap (finite)");
  }
  row.resize(spec.vocab);
  for (int64_t i = 0; i < spec.vocab; ++i) {
    row[i] = i < spec.head ? static_cast<float>(-0.5 * double(i))
                           : static_cast<float>(-(spec.tail_min_gap +
                                                  (spec.tail_max_gap - spec.tail_min_gap) * rng.Uniform()));
  }
  // Spread the head tokens over the vocabulary so head and tail ids interleave.
  for (int64_t i = spec.vocab - 1; i > 0; --i) std::swap(row[i], row[rng.Below(uint64_t(i) + 1)]);
  return row;
}

Result<std::vector<float>> NpyRow(const RowSpec& spec) {
  std::vector<float> row;
  std::filesystem::path p = spec.path;
  if (p.is_relative() && !spec.base_dir.empty()) p = spec.base_dir / p;
  auto array = LoadNpy(p);
  if (!array.ok()) return array.error();
  if (spec.row < 0 || spec.row >= array->rows()) {
    return InvalidArgument("row npy: row = " + std::to_string(spec.row) + " is outside [0, " +
                           std::to_string(array->rows()) + ") for " + p.string());
  }
  const int64_t cols = array->cols();
  row.assign(array->data.begin() + spec.row * cols, array->data.begin() + (spec.row + 1) * cols);
  for (float x : row) {
    if (std::isnan(x)) return InvalidArgument("row npy: row " + std::to_string(spec.row) + " of " + p.string() +
                                              " contains NaN");
  }
  return row;
}

// mask_fraction: that many tokens other than the argmax at -inf.
Status MaskRow(const RowSpec& spec, Stream& rng, std::vector<float>& row) {
  const std::string& k = spec.kind;
  if (spec.mask_fraction != 0.0) {
    if (!(spec.mask_fraction > 0.0 && spec.mask_fraction < 1.0)) {
      return InvalidArgument("row " + k + ": mask_fraction = " + FormatSignificant(spec.mask_fraction) +
                             " is outside [0, 1)");
    }
    const int64_t v = static_cast<int64_t>(row.size());
    const int64_t keep = int64_t(std::max_element(row.begin(), row.end()) - row.begin());
    const auto masked = static_cast<int64_t>(std::floor(spec.mask_fraction * double(v)));
    // Choose `masked` distinct tokens other than the argmax: a partial Fisher-Yates over the other ids.
    std::vector<int64_t> ids;
    ids.reserve(v - 1);
    for (int64_t i = 0; i < v; ++i) {
      if (i != keep) ids.push_back(i);
    }
    const int64_t n = std::min<int64_t>(masked, int64_t(ids.size()));
    for (int64_t i = 0; i < n; ++i) {
      const int64_t j = i + int64_t(rng.Below(uint64_t(ids.size() - i)));
      std::swap(ids[i], ids[j]);
      row[ids[i]] = -std::numeric_limits<float>::infinity();
    }
  }
  return Status::Ok();
}

void PoisonRow(const RowSpec& spec, Stream& rng, std::vector<float>& row) {
  // An unsamplable row: the only right answer of a sampler is the invalid marker (never a token).
  if (spec.poison == "nan") {
    row[static_cast<size_t>(rng.Below(uint64_t(row.size())))] = std::numeric_limits<float>::quiet_NaN();
  } else if (spec.poison == "all_nan") {
    std::fill(row.begin(), row.end(), std::numeric_limits<float>::quiet_NaN());
  } else if (spec.poison == "all_masked") {
    std::fill(row.begin(), row.end(), -std::numeric_limits<float>::infinity());
  }
}

}  // namespace

Result<std::vector<float>> MakeRow(const RowSpec& spec, uint64_t seed) {
  Stream rng(SplitMix64(seed ^ 0x5EED0F10917500ULL));
  std::vector<float> row;
  const std::string& k = spec.kind;
  if (k == "gaussian" || k == "near_flat") {
    if (Status st = CheckVocab(spec); !st.ok()) return st;
    if (Status st = CheckPositive(spec, "sigma", spec.sigma); !st.ok()) return st;
    row.resize(spec.vocab);
    for (float& x : row) x = static_cast<float>(spec.sigma * rng.Normal());
  } else if (k == "zipf") {
    if (Status st = CheckVocab(spec); !st.ok()) return st;
    if (Status st = CheckPositive(spec, "exponent", spec.exponent); !st.ok()) return st;
    row.resize(spec.vocab);
    for (int64_t i = 0; i < spec.vocab; ++i) row[i] = static_cast<float>(-spec.exponent * std::log(double(i + 1)));
    for (int64_t i = spec.vocab - 1; i > 0; --i) std::swap(row[i], row[rng.Below(uint64_t(i) + 1)]);
  } else if (k == "gumbel") {
    if (Status st = CheckVocab(spec); !st.ok()) return st;
    if (Status st = CheckPositive(spec, "scale", spec.scale); !st.ok()) return st;
    row.resize(spec.vocab);
    for (float& x : row) x = static_cast<float>(spec.scale * rng.Gumbel());
  } else if (k == "tied") {
    if (Status st = CheckVocab(spec); !st.ok()) return st;
    if (spec.levels < 1 || spec.levels > spec.vocab) {
      return InvalidArgument("row tied: levels = " + std::to_string(spec.levels) + " is outside [1, vocab]");
    }
    if (Status st = CheckPositive(spec, "spacing", spec.spacing); !st.ok()) return st;
    row.resize(spec.vocab);
    for (float& x : row) x = static_cast<float>(spec.spacing * double(rng.Below(uint64_t(spec.levels))));
  } else if (k == "dyadic") {
    auto made = DyadicRow(spec);
    if (!made.ok()) return made.error();
    row = std::move(*made);
  } else if (k == "many_tail") {
    auto made = ManyTailRow(spec, rng);
    if (!made.ok()) return made.error();
    row = std::move(*made);
  } else if (k == "npy") {
    auto made = NpyRow(spec);
    if (!made.ok()) return made.error();
    row = std::move(*made);
  } else {
    return InvalidArgument("row: unknown kind \"" + k + "\"");
  }
  if (Status st = MaskRow(spec, rng, row); !st.ok()) return st.error();
  PoisonRow(spec, rng, row);
  return row;
}

namespace {

// The elements after the header: little-endian float32 or float16, shape 1-D or 2-D.
template <class Fail>
Result<NpyArray> DecodeNpy(const std::string& bytes, size_t data_start, const std::string& descr,
                           const std::vector<int64_t>& shape, Fail&& fail) {
  size_t elem = 0;
  if (descr == "<f4" || descr == "=f4") {
    elem = 4;
  } else if (descr == "<f2" || descr == "=f2") {
    elem = 2;
  } else {
    return fail("dtype '" + descr + "' is not supported (little-endian float32 '<f4' or float16 '<f2')");
  }
  if (shape.size() != 1 && shape.size() != 2) {
    return fail("shape has " + std::to_string(shape.size()) + " dimensions (1-D row or 2-D rows x vocab)");
  }
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d <= 0) return fail("shape has an empty dimension");
    if (count > (int64_t{1} << 40) / d) return fail("array too large");
    count *= d;
  }
  if (bytes.size() - data_start != size_t(count) * elem) {
    return fail("data is " + std::to_string(bytes.size() - data_start) + " bytes, the shape needs " +
                std::to_string(size_t(count) * elem));
  }
  NpyArray out;
  out.shape = shape;
  out.dtype = descr;
  out.data.resize(count);
  const char* p = bytes.data() + data_start;
  for (int64_t i = 0; i < count; ++i) {
    if (elem == 4) {
      uint32_t bits = 0;
      for (int b = 0; b < 4; ++b) bits |= uint32_t(static_cast<unsigned char>(p[4 * i + b])) << (8 * b);
      std::memcpy(&out.data[i], &bits, 4);
    } else {
      const uint16_t bits = uint16_t(static_cast<unsigned char>(p[2 * i]) |
                                     (uint16_t(static_cast<unsigned char>(p[2 * i + 1])) << 8));
      out.data[i] = Float16ToFloat(bits);
    }
  }
  return out;
}

}  // namespace

namespace {

// The header dict of a .npy file ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5), }"), read by hand:
// a Python literal, not JSON.
struct NpyHeader {
  std::string descr, fortran;
  std::vector<int64_t> shape;
};

class HeaderReader {
 public:
  explicit HeaderReader(std::string text) : s_(std::move(text)) {}

  void SkipWs() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t')) ++pos_;
  }
  bool Expect(char c) {
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool ReadString(std::string& out) {
    SkipWs();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return false;
    const char q = s_[pos_++];
    const size_t end = s_.find(q, pos_);
    if (end == std::string::npos) return false;
    out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return true;
  }
  std::string ReadWord() {
    const size_t start = pos_;
    while (pos_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  // "(d0, d1, ...)": "" on success, else what is wrong.
  std::string ReadShape(std::vector<int64_t>& shape) {
    if (!Expect('(')) return "shape must be a tuple";
    while (true) {
      SkipWs();
      if (Expect(')')) return "";
      const size_t start = pos_;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      if (start == pos_) return "shape entries must be non-negative integers";
      if (pos_ - start > 12) return "shape entry too large";
      shape.push_back(std::stoll(s_.substr(start, pos_ - start)));
      SkipWs();
      if (Expect(')')) return "";
      if (!Expect(',')) return "expected ',' or ')' in shape";
    }
  }

 private:
  std::string s_;
  size_t pos_ = 0;
};

// The header's three keys, each once: "" on success, else what is wrong.
std::string ReadNpyHeader(HeaderReader& in, NpyHeader& h) {
  if (!in.Expect('{')) return "header is not a Python dict literal";
  bool have_descr = false, have_fortran = false, have_shape = false;
  while (true) {
    in.SkipWs();
    if (in.Expect('}')) break;
    std::string key;
    if (!in.ReadString(key)) return "expected a quoted key in the header dict";
    if (!in.Expect(':')) return "expected ':' after key '" + key + "'";
    in.SkipWs();
    if (key == "descr") {
      if (!in.ReadString(h.descr)) return "descr must be a string";
      have_descr = true;
    } else if (key == "fortran_order") {
      h.fortran = in.ReadWord();
      if (h.fortran != "True" && h.fortran != "False") return "fortran_order must be True or False";
      have_fortran = true;
    } else if (key == "shape") {
      if (std::string bad = in.ReadShape(h.shape); !bad.empty()) return bad;
      have_shape = true;
    } else {
      return "unexpected header key '" + key + "'";
    }
    in.SkipWs();
    if (in.Expect('}')) break;
    if (!in.Expect(',')) return "expected ',' or '}' in the header dict";
  }
  if (!have_descr || !have_fortran || !have_shape) return "header needs descr, fortran_order and shape";
  return "";
}

}  // namespace

Result<NpyArray> ParseNpy(const std::string& bytes, const std::string& what) {
  auto fail = [&](const std::string& m) { return ParseError(what + ": not a valid .npy file: " + m); };
  static const char kMagic[] = "\x93NUMPY";
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, 6) != 0) return fail("bad magic (expected \\x93NUMPY)");
  const auto major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0;
  size_t header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (size_t(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return fail("truncated header length");
    for (int i = 0; i < 4; ++i) header_len |= size_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return fail("format version " + std::to_string(major) + " is not supported (1, 2, 3)");
  }
  if (header_start + header_len > bytes.size()) return fail("header runs past the end of the file");
  std::string header = bytes.substr(header_start, header_len);
  // Strip trailing padding (spaces and the final newline).
  while (!header.empty() && (header.back() == ' ' || header.back() == '\n' || header.back() == '\0')) header.pop_back();
  HeaderReader reader(std::move(header));
  NpyHeader h;
  if (std::string bad = ReadNpyHeader(reader, h); !bad.empty()) return fail(bad);
  if (h.fortran != "False") return fail("fortran_order True is not supported (save a C-order array)");
  return DecodeNpy(bytes, header_start + header_len, h.descr, h.shape, fail);
}

Result<NpyArray> LoadNpy(const std::filesystem::path& path) {
  constexpr uint64_t kMaxNpyBytes = uint64_t{2} << 30;  // 2 GiB: 2048 rows of V = 262144 in fp32
  // Never a FIFO or a device: the open would block (a FIFO without a writer) or read without end.
  Result<std::string> bytes = ReadRegularFileCapped(path, kMaxNpyBytes, "an .npy file");
  if (!bytes.ok()) return bytes.error();
  return ParseNpy(*bytes, path.string());
}

}  // namespace samplecheck::harness
