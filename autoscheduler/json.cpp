#include "json.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kiln::autoschedule::json {

namespace {

[[noreturn]] void fail(const std::string& what) { throw ParseError{what}; }

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Value document() {
    Value v = value();
    skip_space();
    if (pos_ != s_.size()) error("unexpected text after the value");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& what) { fail(what + " at byte " + std::to_string(pos_)); }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }

  bool consume(char c) {
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!consume(c)) error(std::string("expected '") + c + "'");
  }

  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  Value value() {
    // Depth bounds the recursion, so a hostile file cannot overflow the stack.
    if (++depth_ > 64) error("nesting deeper than 64");
    skip_space();
    if (pos_ >= s_.size()) error("unexpected end of text");
    Value v;
    const char c = s_[pos_];
    if (c == '{') v = object();
    else if (c == '[') v = array();
    else if (c == '"') v = string();
    else if (literal("true")) v = true;
    else if (literal("false")) v = false;
    else if (literal("null")) v = Value();
    else v = number();
    --depth_;
    return v;
  }

  Value object() {
    expect('{');
    Object o;
    if (consume('}')) return o;
    do {
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != '"') error("expected a member name");
      std::string key = string();
      expect(':');
      o[key] = value();
    } while (consume(','));
    expect('}');
    return o;
  }

  Value array() {
    expect('[');
    Array a;
    if (consume(']')) return a;
    do {
      a.push_back(value());
    } while (consume(','));
    expect(']');
    return a;
  }

  std::string string() {
    ++pos_;  // the opening quote
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (static_cast<unsigned char>(c) < 0x20) error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) break;
      const char e = s_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': out += unicode_escape(); break;
        default: error(std::string("bad escape '\\") + e + "'");
      }
    }
    if (pos_ >= s_.size()) error("unterminated string");
    ++pos_;
    return out;
  }

  // \uXXXX as UTF-8 (the writer only emits these for control characters).
  std::string unicode_escape() {
    if (pos_ + 4 > s_.size()) error("short \\u escape");
    // Exactly four hex digits: strtol alone would also take a sign or spaces ("\\u-001"
    // read as -1, written as the byte 0xFF).
    long cp = 0;
    for (size_t i = 0; i < 4; ++i) {
      const char h = s_[pos_ + i];
      if (!std::isxdigit(static_cast<unsigned char>(h))) error("bad \\u escape: expected four hex digits");
      cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : std::tolower(h) - 'a' + 10);
    }
    pos_ += 4;
    std::string out;
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
    return out;
  }

  Value number() {
    const size_t start = pos_;
    if (pos_ < s_.size() && s_[pos_] == '-') ++pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
                                s_[pos_] == 'e' || s_[pos_] == 'E' || s_[pos_] == '+' || s_[pos_] == '-')) {
      ++pos_;
    }
    const std::string text = s_.substr(start, pos_ - start);
    char* end = nullptr;
    const double d = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(d)) {
      pos_ = start;
      error("expected a value");
    }
    return d;
  }

  const std::string& s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

void write_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void write(std::string& out, const Value& v, int indent) {
  const std::string pad(size_t(indent + 2), ' '), close(size_t(indent), ' ');
  if (v.is_null()) {
    out += "null";
  } else if (v.is_bool()) {
    out += v.as_bool() ? "true" : "false";
  } else if (v.is_number()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v.as_number());
    out += buf;
  } else if (v.is_string()) {
    write_string(out, v.as_string());
  } else if (v.is_array()) {
    const Array& a = v.as_array();
    if (a.empty()) {
      out += "[]";
      return;
    }
    out += "[\n";
    for (size_t i = 0; i < a.size(); ++i) {
      out += pad;
      write(out, a[i], indent + 2);
      out += i + 1 < a.size() ? ",\n" : "\n";
    }
    out += close + "]";
  } else {
    const Object& o = v.as_object();
    if (o.empty()) {
      out += "{}";
      return;
    }
    out += "{\n";
    size_t i = 0;
    for (const auto& [key, member] : o) {
      out += pad;
      write_string(out, key);
      out += ": ";
      write(out, member, indent + 2);
      out += ++i < o.size() ? ",\n" : "\n";
    }
    out += close + "}";
  }
}

}  // namespace

bool Value::as_bool() const {
  if (!is_bool()) fail("expected true or false");
  return std::get<bool>(v_);
}
double Value::as_number() const {
  if (!is_number()) fail("expected a number");
  return std::get<double>(v_);
}
const std::string& Value::as_string() const {
  if (!is_string()) fail("expected a string");
  return std::get<std::string>(v_);
}
const Array& Value::as_array() const {
  if (!is_array()) fail("expected an array");
  return *std::get<std::shared_ptr<Array>>(v_);
}
const Object& Value::as_object() const {
  if (!is_object()) fail("expected an object");
  return *std::get<std::shared_ptr<Object>>(v_);
}
const Value& Value::at(const std::string& key) const {
  const Object& o = as_object();
  auto it = o.find(key);
  if (it == o.end()) fail("missing member \"" + key + "\"");
  return it->second;
}
bool Value::has(const std::string& key) const { return is_object() && as_object().count(key); }

Value parse(const std::string& text) { return Parser(text).document(); }

std::string dump(const Value& v) {
  std::string out;
  write(out, v, 0);
  return out + "\n";
}

}  // namespace kiln::autoschedule::json
