// The study's JSON files, field by field: a struct's fields are listed once, in a "fields"
// function object fields(object, visit) that calls visit(name, member) for each, and that one
// list writes the JSON and reads it back. Numbers that were not measured (NaN) are null.
#pragma once

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace rg {

template <class T>
void put_field(nlohmann::json& j, const char* name, const T& value) {
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) {
      j[name] = nullptr;
      return;
    }
  }
  j[name] = value;
}

// Reads j[name] into `value`: null is NaN for numbers; a missing or mistyped field is an error
// that names it.
template <class T>
Status get_field(const nlohmann::json& j, const char* name, T& value) {
  const std::string field = std::string("field \"") + name + "\"";
  if (!j.contains(name)) return Status::error("missing " + field);
  const nlohmann::json& v = j.at(name);
  if constexpr (std::is_floating_point_v<T>) {
    if (v.is_null()) {
      value = NAN;
      return Status();
    }
    if (!v.is_number()) return Status::error(field + " is not a number");
  } else if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) return Status::error(field + " is not true or false");
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) return Status::error(field + " is not a whole number");
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return Status::error(field + " is not text");
  } else {
    try {
      value = v.get<T>();  // lists
    } catch (const nlohmann::json::exception&) {
      return Status::error(field + " has the wrong type");
    }
    return Status();
  }
  value = v.get<T>();
  return Status();
}

template <class Object, class Fields>
nlohmann::json fields_json(const Object& object, Fields fields) {
  nlohmann::json j = nlohmann::json::object();
  fields(object, [&](const char* name, const auto& value) { put_field(j, name, value); });
  return j;
}

template <class Object, class Fields>
Status fields_from_json(const nlohmann::json& j, Object& object, Fields fields) {
  if (!j.is_object()) return Status::error("not a JSON object");
  Status status;
  fields(object, [&](const char* name, auto& value) {
    if (status.ok()) status = get_field(j, name, value);
  });
  return status;
}

}  // namespace rg
