#include "runtime/npy.hpp"

#include <bit>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "support/bounded_read.hpp"

namespace zyntax {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr const char* kSupported = "(supported: f16, f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, bool)";
// Deeper nesting than any real header; the limit keeps the parser's recursion bounded.
constexpr int kMaxHeaderDepth = 32;

[[noreturn]] void fail(const std::string& name, const std::string& message) { throw DataError(name + ": " + message); }

struct NpyType {
  DType dtype;
  const char* code;  // kind and size as in a descr: "f4"
};

const NpyType kNpyTypes[] = {
    {DType::F16, "f2"}, {DType::F32, "f4"}, {DType::F64, "f8"}, {DType::I8, "i1"},  {DType::I16, "i2"},
    {DType::I32, "i4"}, {DType::I64, "i8"}, {DType::U8, "u1"},  {DType::U16, "u2"}, {DType::U32, "u4"},
    {DType::U64, "u8"}, {DType::Bool, "b1"},
};

// One value of the Python literal that a .npy header holds.
struct Value {
  enum Kind { String, Bool, Int, None, Sequence, Dict } kind = None;
  std::string text;  // the string's contents, or the value's source text
  bool flag = false;
  int64_t number = 0;
  bool number_overflowed = false;
  std::vector<Value> items;               // tuple and list elements, dict values
  std::vector<std::string> keys;          // dict keys, parallel to items
};

// A small recursive-descent parser for the header dict: strings, True,
// False, None, integers, tuples, lists and dicts (enough to read any header
// and to report unsupported ones, such as structured dtypes, by their text).
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  Value parse_document() {
    Value v = parse_value(0);
    skip_space();
    if (pos_ != text_.size()) error("unexpected text after the dict");
    if (v.kind != Value::Dict) error("the header is not a dict");
    return v;
  }

 private:
  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;

  [[noreturn]] void error(const std::string& what) {
    std::string shown(text_.substr(0, 200));
    fail(name_, "malformed .npy header (" + what + " at offset " + std::to_string(pos_) + "): " + shown);
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\0'))
      ++pos_;
  }

  bool accept(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool accept_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value parse_value(int depth) {
    if (depth > kMaxHeaderDepth) error("nesting too deep");
    skip_space();
    if (pos_ >= text_.size()) error("unexpected end");
    size_t start = pos_;
    Value v;
    char c = text_[pos_];
    if (c == '\'' || c == '"') {
      v.kind = Value::String;
      v.text = parse_string();
      return v;
    }
    if (c == '(' || c == '[') {
      parse_sequence(v, c == '(' ? ')' : ']', depth);
    } else if (c == '{') {
      parse_dict(v, depth);
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      parse_int(v);
    } else if (accept_word("True") || accept_word("False")) {
      v.kind = Value::Bool;
      v.flag = text_[start] == 'T';
    } else if (accept_word("None")) {
      v.kind = Value::None;
    } else {
      error("unexpected character");
    }
    v.text = std::string(text_.substr(start, pos_ - start));
    return v;
  }

  std::string parse_string() {
    char quote = text_[pos_++];
    std::string s;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size()) ++pos_;
      s += text_[pos_++];
    }
    if (pos_ >= text_.size()) error("unterminated string");
    ++pos_;
    return s;
  }

  void parse_sequence(Value& v, char close, int depth) {
    v.kind = Value::Sequence;
    ++pos_;
    while (!accept(close)) {
      v.items.push_back(parse_value(depth + 1));
      if (!accept(',')) {
        if (!accept(close)) error(std::string("expected ',' or '") + close + "'");
        return;
      }
    }
  }

  void parse_dict(Value& v, int depth) {
    v.kind = Value::Dict;
    ++pos_;
    while (!accept('}')) {
      skip_space();
      if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) error("expected a string key");
      v.keys.push_back(parse_string());
      if (!accept(':')) error("expected ':'");
      v.items.push_back(parse_value(depth + 1));
      if (!accept(',')) {
        if (!accept('}')) error("expected ',' or '}'");
        return;
      }
    }
  }

  void parse_int(Value& v) {
    v.kind = Value::Int;
    bool negative = text_[pos_] == '-';
    if (negative) ++pos_;
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') error("expected a digit");
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      int digit = text_[pos_++] - '0';
      if (__builtin_mul_overflow(v.number, 10, &v.number) || __builtin_add_overflow(v.number, digit, &v.number))
        v.number_overflowed = true;
    }
    if (negative) v.number = -v.number;
    if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 long suffix
  }
};

const Value* find_key(const Value& dict, std::string_view key) {
  for (size_t i = 0; i < dict.keys.size(); ++i)
    if (dict.keys[i] == key) return &dict.items[i];
  return nullptr;
}

struct Header {
  DType dtype;
  bool byte_swap;
  Shape shape;
};

Header interpret_header(std::string_view text, const std::string& name) {
  Value dict = HeaderParser(text, name).parse_document();
  const Value* descr = find_key(dict, "descr");
  const Value* fortran = find_key(dict, "fortran_order");
  const Value* shape = find_key(dict, "shape");
  if (!descr || !fortran || !shape) fail(name, "the .npy header lacks 'descr', 'fortran_order' or 'shape'");

  std::optional<NpyType> type;
  bool big_endian = std::endian::native == std::endian::big;
  if (descr->kind == Value::String) {
    std::string_view code = descr->text;
    if (!code.empty() && std::string_view("<>|=").find(code[0]) != std::string_view::npos) {
      if (code[0] == '<') big_endian = false;
      if (code[0] == '>') big_endian = true;
      code.remove_prefix(1);
    }
    for (const NpyType& t : kNpyTypes)
      if (code == t.code) type = t;
  }
  if (!type) fail(name, "unsupported dtype '" + descr->text + "' " + kSupported);

  if (fortran->kind != Value::Bool) fail(name, "'fortran_order' is not True or False in the .npy header");
  if (fortran->flag)
    fail(name, "Fortran-order arrays are not supported; save with np.ascontiguousarray");

  if (shape->kind != Value::Sequence) fail(name, "'shape' is not a tuple in the .npy header");
  Header h{type->dtype, big_endian != (std::endian::native == std::endian::big), {}};
  for (const Value& d : shape->items) {
    if (d.kind != Value::Int || d.number_overflowed || d.number < 0)
      fail(name, "invalid dimension '" + d.text + "' in shape " + shape->text);
    h.shape.push_back(d.number);
  }
  return h;
}

uint64_t read_le(std::string_view bytes, size_t at, size_t width) {
  uint64_t v = 0;
  for (size_t i = 0; i < width; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

void swap_elements(unsigned char* data, size_t count, size_t size) {
  if (size < 2) return;
  for (size_t i = 0; i < count; ++i)
    for (size_t lo = 0, hi = size - 1; lo < hi; ++lo, --hi) std::swap(data[i * size + lo], data[i * size + hi]);
}

std::string shape_tuple(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string encode(const Tensor& t, const std::string& name) {
  if (!t.valid()) fail(name, "cannot save a null tensor");
  const NpyType* type = nullptr;
  for (const NpyType& n : kNpyTypes)
    if (n.dtype == t.dtype()) type = &n;
  if (!type)
    fail(name, std::string("unsupported dtype '") + dtype_name(t.dtype()) + "' " + kSupported +
                   "; convert with astype first");
  bool one_byte = dtype_size(t.dtype()) == 1;
  std::string dict = std::string("{'descr': '") + (one_byte ? "|" : "<") + type->code +
                     "', 'fortran_order': False, 'shape': " + shape_tuple(t.shape()) + ", }";
  // Version 1.0 unless the header outgrows its 2-byte length; data starts at a multiple of 64.
  // Header length (dict, padding and newline) once the data offset is rounded up to 64.
  auto padded_len = [&](size_t prefix) { return (prefix + dict.size() + 1 + 63) / 64 * 64 - prefix; };
  bool v1 = padded_len(10) <= 65535;
  size_t prefix = v1 ? 10 : 12;
  size_t header_len = padded_len(prefix);
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';

  std::string out(kMagic);
  out += static_cast<char>(v1 ? 1 : 2);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xFF);
  out += dict;
  size_t data_at = out.size();
  out.append(static_cast<const char*>(t.data()), t.nbytes());
  if (std::endian::native == std::endian::big)
    swap_elements(reinterpret_cast<unsigned char*>(out.data() + data_at), static_cast<size_t>(t.numel()),
                  dtype_size(t.dtype()));
  return out;
}

}  // namespace

Tensor parse_npy(const std::string& bytes, const std::string& name_for_errors) {
  const std::string& name = name_for_errors;
  std::string_view in = bytes;
  if (in.size() < kMagic.size() || in.substr(0, kMagic.size()) != kMagic) fail(name, "not a .npy file");
  if (in.size() < 8) fail(name, "truncated header: expected at least 8 bytes, found " + std::to_string(in.size()));
  int major = static_cast<unsigned char>(in[6]), minor = static_cast<unsigned char>(in[7]);
  if (major < 1 || major > 3)
    fail(name, "unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor));
  size_t prefix = major == 1 ? 10 : 12;
  if (in.size() < prefix)
    fail(name, "truncated header: expected at least " + std::to_string(prefix) + " bytes, found " +
                   std::to_string(in.size()));
  uint64_t header_len = read_le(in, 8, prefix - 8);
  if (in.size() - prefix < header_len)
    fail(name, "truncated header: expected " + std::to_string(header_len) + " header bytes, found " +
                   std::to_string(in.size() - prefix));
  Header h = interpret_header(in.substr(prefix, header_len), name);

  // Checked here, before anything is allocated, so that no shape can overflow.
  size_t size = dtype_size(h.dtype);
  int64_t nonzero_product = 1;
  bool empty = false;
  for (int64_t d : h.shape) {
    if (d == 0)
      empty = true;
    else if (__builtin_mul_overflow(nonzero_product, d, &nonzero_product))
      fail(name, "shape " + shape_str(h.shape) + " is too large");
  }
  uint64_t numel = empty ? 0 : static_cast<uint64_t>(nonzero_product);
  if (numel > UINT64_MAX / size) fail(name, "shape " + shape_str(h.shape) + " is too large");
  uint64_t needed = numel * size;
  std::string_view data = in.substr(prefix + header_len);
  if (data.size() < needed)
    fail(name, "truncated data: expected " + std::to_string(needed) + " bytes for shape " + shape_str(h.shape) +
                   " of " + dtype_name(h.dtype) + ", found " + std::to_string(data.size()));

  Tensor t = Tensor::empty(h.dtype, h.shape);
  auto* out = t.data_as<unsigned char>();
  if (needed > 0) std::memcpy(out, data.data(), needed);
  if (h.byte_swap) swap_elements(out, numel, size);
  if (h.dtype == DType::Bool)
    for (uint64_t i = 0; i < numel; ++i) out[i] = out[i] != 0;
  return t;
}

std::string serialize_npy(const Tensor& t) { return encode(t, "npy"); }

Tensor load_npy(const std::string& path) {
  // Regular files only (never /dev/zero or a FIFO), and at most what a
  // tensor may hold.
  std::string why;
  std::optional<std::string> bytes = read_regular_file(path, size_t{1} << 40, &why);
  if (!bytes) fail(path, "cannot read file: " + why);
  return parse_npy(*bytes, path);
}

void save_npy(const Tensor& t, const std::string& path) { write_file_bytes(encode(t, path), path); }

void write_file_bytes(const std::string& bytes, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(path, std::string("cannot open file for writing: ") + std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  int err = errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) fail(path, std::string("cannot write file: ") + std::strerror(err));
}

}  // namespace zyntax
