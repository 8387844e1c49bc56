#include "json.h"

#include <cmath>
#include <cstdint>

#include <nlohmann/json.hpp>

namespace kiln::autoschedule::json {

namespace {

[[noreturn]] void fail(const std::string& what) { throw ParseError{what}; }

constexpr int kMaxDepth = 64;  // a hostile file cannot make the conversion recurse deeply

Value from_nlohmann(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value();
    case nlohmann::json::value_t::boolean: return j.get<bool>();
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: {
      const double d = j.get<double>();
      if (!std::isfinite(d)) fail("a number beyond the range of a double");
      return d;
    }
    case nlohmann::json::value_t::string: return j.get<std::string>();
    case nlohmann::json::value_t::array: {
      Array a;
      for (const nlohmann::json& e : j) a.push_back(from_nlohmann(e));
      return a;
    }
    case nlohmann::json::value_t::object: {
      Object o;
      for (auto it = j.begin(); it != j.end(); ++it) o[it.key()] = from_nlohmann(it.value());
      return o;
    }
    default: fail("binary values are not JSON");
  }
}

nlohmann::json to_nlohmann(const Value& v) {
  if (v.is_null()) return nullptr;
  if (v.is_bool()) return v.as_bool();
  if (v.is_number()) {
    // Whole numbers print as integers ("version": 1), others with round-trip precision.
    const double d = v.as_number();
    if (d == std::trunc(d) && std::fabs(d) < 9007199254740992.0) return static_cast<int64_t>(d);
    return d;
  }
  if (v.is_string()) return v.as_string();
  if (v.is_array()) {
    nlohmann::json a = nlohmann::json::array();
    for (const Value& e : v.as_array()) a.push_back(to_nlohmann(e));
    return a;
  }
  nlohmann::json o = nlohmann::json::object();
  for (const auto& [key, member] : v.as_object()) o[key] = to_nlohmann(member);
  return o;
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

Value parse(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text, [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
      if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth));
      return true;
    });
  } catch (const nlohmann::json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: syntax error ..."
    std::string what = e.what();
    if (const size_t colon = what.find(": "); colon != std::string::npos) what = what.substr(colon + 2);
    fail(what + " at byte " + std::to_string(e.byte));
  } catch (const nlohmann::json::exception& e) {  // out_of_range.406: a number beyond a double
    std::string what = e.what();
    if (const size_t bracket = what.find("] "); bracket != std::string::npos) what = what.substr(bracket + 2);
    fail(what);
  }
  return from_nlohmann(j);
}

std::string dump(const Value& v) {
  // Invalid UTF-8 (a string read from elsewhere) is replaced, not thrown.
  return to_nlohmann(v).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace kiln::autoschedule::json
