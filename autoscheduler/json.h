// A small JSON value for the tuning database, which must tell a corrupt file from a good
// one rather than guess: typed accessors that throw ParseError naming what is wrong. The
// text is read and written by nlohmann-json (json.cpp; header-only, so the autoscheduler
// plugin still links nothing but Halide).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace kiln::autoschedule::json {

class Value;
using Array = std::vector<Value>;
using Object = std::map<std::string, Value>;  // sorted keys: stable files, stable diffs

class Value {
 public:
  Value() = default;  // null
  Value(bool b) : v_(b) {}
  Value(double d) : v_(d) {}
  Value(int i) : v_(double(i)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(Array a) : v_(std::make_shared<Array>(std::move(a))) {}
  Value(Object o) : v_(std::make_shared<Object>(std::move(o))) {}

  bool is_null() const { return v_.index() == 0; }
  bool is_bool() const { return v_.index() == 1; }
  bool is_number() const { return v_.index() == 2; }
  bool is_string() const { return v_.index() == 3; }
  bool is_array() const { return v_.index() == 4; }
  bool is_object() const { return v_.index() == 5; }

  // Accessors of the wrong kind throw ParseError, so a well-formed file with the wrong
  // shape is reported like a corrupt one.
  bool as_bool() const;
  double as_number() const;
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;
  // A member of an object; a missing member throws ParseError naming it.
  const Value& at(const std::string& key) const;
  bool has(const std::string& key) const;

 private:
  std::variant<std::monostate, bool, double, std::string, std::shared_ptr<Array>, std::shared_ptr<Object>> v_;
};

// Thrown for malformed text (with the byte offset) or a value of the wrong kind.
struct ParseError {
  std::string message;
};

Value parse(const std::string& text);
// Two-space indented text ending in a newline. Numbers keep 17 significant digits.
std::string dump(const Value& v);

}  // namespace kiln::autoschedule::json
