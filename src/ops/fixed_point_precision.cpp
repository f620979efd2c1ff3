// Fixed-point training precisions by name (fixed_point_precision.h): the parser and the names.
#include "ops/fixed_point_precision.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "ops/fixed_point_gemm.h"
#include "ops/quant_params.h"

namespace rg {

namespace {

constexpr const char* kGrammar =
    "[w<bits>][a<bits>][g<bits>][e<bits>], at least one, bits 2-16 (weights, activations, weight gradients, errors), then "
    "-sr, -rn, -p2, -fl<fraction bits>, -pc, -zp[<roles>] or -sw; e.g. w8a8e8, w4a8, w16a16g16-sr, w4a4-pc-zp, "
    "w16a16g16-fl14-sw";
constexpr size_t kMaxNameLength = 64;

Status refuse(const std::string& text, const std::string& rule) {
  return Status::error("'" + text + "' is not a fixed-point precision: " + rule + " (" + kGrammar + ")");
}

FixedPointFormat* role_of(FixedPointRoles& r, char letter) {
  switch (letter) {
    case 'w': return &r.weights;
    case 'a': return &r.activations;
    case 'g': return &r.gradients;
    case 'e': return &r.errors;
  }
  return nullptr;
}

// "w16a8..." -> the roles' bits; `rest` gets what follows them (the suffixes).
Status parse_roles(const std::string& text, FixedPointRoles* roles, std::string* rest) {
  const std::string order = "wage";
  size_t at = 0, next_role = 0;
  while (at < text.size() && text[at] != '-') {
    const size_t role = order.find(text[at]);
    if (role == std::string::npos) return refuse(text, std::string("'") + text[at] + "' is not a role");
    if (role < next_role) return refuse(text, std::string("role '") + text[at] + "' twice or out of the order w, a, g, e");
    size_t end = at + 1;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) && end - at <= 2) ++end;
    const std::string digits = text.substr(at + 1, end - at - 1);
    if (digits.empty() || digits[0] == '0' || (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])))) {
      return refuse(text, std::string("role '") + text[at] + "' needs its bits, 2 to 16");
    }
    const int bits = std::stoi(digits);
    if (bits < kMinFixedPointBits || bits > kMaxFixedPointBits) {
      return refuse(text, std::string("role '") + text[at] + "' has " + digits + " bits; 2 to 16 are possible");
    }
    role_of(*roles, text[at])->bits = bits;
    next_role = role + 1;
    at = end;
  }
  if (at == 0) return refuse(text, "it names no role");
  *rest = text.substr(at);
  return Status();
}

// "-fl14" -> 14 in *fraction_bits; false for another suffix. An error for digits out of range.
Result<bool> fraction_suffix(const std::string& text, const std::string& suffix, int* fraction_bits) {
  if (suffix.compare(0, 3, "-fl") != 0) return false;
  const std::string digits = suffix.substr(3);
  const bool number = !digits.empty() && digits.size() <= 2 && (digits == "0" || digits[0] != '0') &&
                      std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (!number || std::stoi(digits) > kMaxFractionBits) {
    return refuse(text, "'" + suffix + "' needs its fraction bits, 0 to " + std::to_string(kMaxFractionBits));
  }
  *fraction_bits = std::stoi(digits);
  return true;
}

// "-zp" (the activations) or "-zp<roles>" ("-zpae": activations and errors): those roles get a
// zero point; false for another suffix. An error for a role not named, twice or out of order.
Result<bool> zero_point_suffix(const std::string& text, const std::string& suffix, FixedPointRoles* roles) {
  if (suffix.compare(0, 3, "-zp") != 0) return false;
  const std::string order = "wage", letters = suffix.size() == 3 ? "a" : suffix.substr(3);
  size_t next = 0;
  for (char letter : letters) {
    const size_t role = order.find(letter);
    if (role == std::string::npos) return refuse(text, "'" + suffix + "': '" + letter + "' is not a role (w, a, g, e)");
    if (role < next) return refuse(text, "'" + suffix + "': a role twice or out of the order w, a, g, e");
    next = role + 1;
    FixedPointFormat* f = role_of(*roles, letter);
    if (!f->quantized()) return refuse(text, suffix + " gives role '" + letter + "' a zero point: name its bits");
    f->affine = true;
  }
  return true;
}

// The suffixes after the roles: each "-xx" once, -sr and -rn not together, one scale rule.
Status apply_suffixes(const std::string& text, const std::string& rest, FixedPointRoles* roles) {
  std::vector<std::string> seen;
  int fraction_bits = -1;
  for (size_t at = 0; at < rest.size();) {
    const size_t end = rest.find('-', at + 1);
    const std::string suffix = rest.substr(at, end == std::string::npos ? std::string::npos : end - at);
    for (const std::string& s : seen)
      if (s == suffix) return refuse(text, "suffix " + suffix + " twice");
    seen.push_back(suffix);
    if (suffix == "-qat" || suffix == "-ptq") {
      return refuse(text, suffix + " ends a name of the int8 engine's forms alone (w<bits>a<bits>" + suffix + ")");
    }
    RG_ASSIGN(const bool fraction, fraction_suffix(text, suffix, &fraction_bits));
    if (fraction && seen.size() > 1 && std::any_of(seen.begin(), seen.end() - 1, [](const std::string& s) {
          return s.compare(0, 3, "-fl") == 0;
        })) {
      return refuse(text, "two -fl suffixes");
    }
    RG_ASSIGN(const bool zero_point, zero_point_suffix(text, suffix, roles));
    if (zero_point && std::count_if(seen.begin(), seen.end(), [](const std::string& s) { return s.compare(0, 3, "-zp") == 0; }) > 1) {
      return refuse(text, "two -zp suffixes");
    }
    if (!fraction && !zero_point && suffix != "-sr" && suffix != "-rn" && suffix != "-p2" && suffix != "-sw" &&
        suffix != "-pc") {
      return refuse(text, "unknown suffix '" + suffix + "'");
    }
    at = end == std::string::npos ? rest.size() : end;
  }
  const auto has = [&](const char* s) { return std::find(seen.begin(), seen.end(), s) != seen.end(); };
  if (has("-sr") && has("-rn")) return refuse(text, "-sr and -rn together");
  if (has("-p2") && fraction_bits >= 0) return refuse(text, "-p2 and -fl together (one scale rule)");
  if (has("-sw") && !roles->weights.quantized()) return refuse(text, "-sw stores the weights in their format: name w");
  if (has("-pc") && !roles->weights.quantized() && !roles->gradients.quantized()) {
    return refuse(text, "-pc gives the weights and weight gradients a scale per output channel: name w or g");
  }
  if (has("-pc") && fraction_bits >= 0) return refuse(text, "-pc with -fl (a static step is every channel's)");
  if (has("-pc") && (roles->weights.affine || roles->gradients.affine)) {
    return refuse(text, "-pc with a zero point on w or g (per-channel scales are symmetric)");
  }
  roles->stored_weights = has("-sw");
  roles->weights.per_channel = has("-pc") && roles->weights.quantized();
  roles->gradients.per_channel = has("-pc") && roles->gradients.quantized();
  for (FixedPointFormat* f : {&roles->weights, &roles->activations, &roles->gradients, &roles->errors}) {
    if (has("-sr")) f->rounding = Rounding::stochastic;
    if (has("-rn")) f->rounding = Rounding::nearest;
    if (has("-p2")) f->scale = ScaleRule::power_of_two;
    if (fraction_bits >= 0) {
      f->scale = ScaleRule::fixed;
      f->fraction_bits = fraction_bits;
    }
  }
  return Status();
}

// The letters of the quantized roles with a zero point, in the order w, a, g, e ("a", "ae").
std::string zero_point_roles(const FixedPointRoles& roles) {
  std::string letters;
  if (roles.weights.quantized() && roles.weights.affine) letters += 'w';
  if (roles.activations.quantized() && roles.activations.affine) letters += 'a';
  if (roles.gradients.quantized() && roles.gradients.affine) letters += 'g';
  if (roles.errors.quantized() && roles.errors.affine) letters += 'e';
  return letters;
}

}  // namespace

FixedPointPrecision int8_training_precision() { return FixedPointPrecision{"int8-train", int8_training_roles()}; }

bool names_fixed_point(const std::string& text) {
  return text == "int8-train" || (!text.empty() && std::string("wage").find(text[0]) != std::string::npos);
}

Result<FixedPointPrecision> parse_fixed_point_precision(const std::string& text) {
  if (text == "int8-train") return int8_training_precision();
  if (text.size() > kMaxNameLength) return refuse(text.substr(0, 16) + "...", "over 64 characters");
  FixedPointRoles roles;
  std::string rest;
  RG_TRY(parse_roles(text, &roles, &rest));
  roles.gradients.rounding = roles.errors.rounding = Rounding::stochastic;
  if (roles.gradients.quantized() && !roles.errors.quantized()) roles.errors.bits = roles.gradients.bits;
  RG_TRY(apply_suffixes(text, rest, &roles));
  return FixedPointPrecision{fixed_point_precision_name(roles), roles};
}

bool names_int8_export(const std::string& text) {
  const auto ends_in = [&](const char* suffix) {
    return text.size() > 4 && text.compare(text.size() - 4, 4, suffix) == 0;
  };
  return text == "int8" || text == "int8-qat" || (names_fixed_point(text) && (ends_in("-qat") || ends_in("-ptq")));
}

Result<Int8ExportPrecision> parse_int8_export_precision(const std::string& text) {
  if (text == "int8") return Int8ExportPrecision{"int8", 8, false};
  if (text == "int8-qat") return Int8ExportPrecision{"int8-qat", 8, true};
  const auto refuse_form = [&](const std::string& rule) {
    return Status::error("'" + text + "' is not one of the int8 engine's precisions: " + rule +
                         " (w<bits>a<bits>-ptq or -qat, 2 to 8 bits each; e.g. w4a8-qat)");
  };
  if (text.size() > kMaxNameLength) return refuse(text.substr(0, 16) + "...", "over 64 characters");
  FixedPointRoles roles;
  std::string rest;
  RG_TRY(parse_roles(text, &roles, &rest));
  if (rest != "-qat" && rest != "-ptq") return refuse_form("no other suffix");
  if (roles.gradients.quantized() || roles.errors.quantized()) {
    return refuse_form("gradients and errors are training's (g, e), not the int8 engine's");
  }
  if (!roles.weights.quantized() || roles.weights.bits > kMaxWeightBits) return refuse_form("name the weights' bits, 2 to 8");
  if (!roles.activations.quantized() || roles.activations.bits > 8) {
    return refuse_form("name the activations' bits, 2 to 8 (a8: the int8 engine's own)");
  }
  const bool qat = rest == "-qat";
  return Int8ExportPrecision{int8_export_name(roles.weights.bits, roles.activations.bits, qat), roles.weights.bits, qat,
                             roles.activations.bits};
}

std::string int8_export_name(int weight_bits, int activation_bits, bool qat) {
  if (weight_bits == 8 && activation_bits == 8) return qat ? "int8-qat" : "int8";
  return "w" + std::to_string(weight_bits) + "a" + std::to_string(activation_bits) + (qat ? "-qat" : "-ptq");
}

std::string fixed_point_precision_name(const FixedPointRoles& roles) {
  if (roles == int8_training_precision().roles) return "int8-train";
  std::string name;
  const FixedPointFormat* named[] = {&roles.weights, &roles.activations, &roles.gradients, &roles.errors};
  const char letters[] = {'w', 'a', 'g', 'e'};
  bool all_stochastic = true, all_nearest = true, default_rounding = true, power_of_two = false;
  int fraction_bits = -1;
  for (int r = 0; r < 4; ++r) {
    const FixedPointFormat& f = *named[r];
    if (!f.quantized()) continue;
    const bool shown = r != 3 || !roles.gradients.quantized() || roles.gradients.bits != f.bits;
    if (shown) name += letters[r] + std::to_string(f.bits);
    all_stochastic &= f.rounding == Rounding::stochastic;
    all_nearest &= f.rounding == Rounding::nearest;
    default_rounding &= f.rounding == (r < 2 ? Rounding::nearest : Rounding::stochastic);
    power_of_two |= f.scale == ScaleRule::power_of_two;
    if (f.scale == ScaleRule::fixed) fraction_bits = f.fraction_bits;
  }
  if (!default_rounding) name += all_stochastic ? "-sr" : all_nearest ? "-rn" : "-mixed";
  if (power_of_two) name += "-p2";
  if (fraction_bits >= 0) name += "-fl" + std::to_string(fraction_bits);
  if (roles.weights.per_channel || roles.gradients.per_channel) name += "-pc";
  const std::string zero_points = zero_point_roles(roles);
  if (!zero_points.empty()) name += zero_points == "a" ? "-zp" : "-zp" + zero_points;
  if (roles.stored_weights) name += "-sw";
  return name;
}

std::string describe_fixed_point(const FixedPointRoles& roles) {
  const FixedPointFormat* named[] = {&roles.weights, &roles.activations, &roles.gradients, &roles.errors};
  const char letters[] = {'w', 'a', 'g', 'e'};
  std::string bits, nearest, stochastic;
  for (int r = 0; r < 4; ++r) {
    const FixedPointFormat& f = *named[r];
    bits += (r ? " " : "") + std::string(1, letters[r]) + (f.quantized() ? std::to_string(f.bits) : std::string(" f32"));
    if (f.quantized()) (f.rounding == Rounding::nearest ? nearest : stochastic) += letters[r];
  }
  const std::string rounding = stochastic.empty() ? "all nearest"
                               : nearest.empty()  ? "all stochastic"
                                                  : nearest + " nearest, " + stochastic + " stochastic";
  const FixedPointFormat& first = roles.weights.quantized() ? roles.weights : roles.activations.quantized() ? roles.activations
                                                                                                         : roles.errors;
  const bool per_channel = roles.weights.per_channel || roles.gradients.per_channel;
  std::string scales = first.scale == ScaleRule::real           ? "real scales"
                       : first.scale == ScaleRule::power_of_two ? "power-of-two scales"
                                                                : std::to_string(first.fraction_bits) + " fraction bits (static)";
  const std::string channel_roles = std::string(roles.weights.per_channel ? "w" : "") +
                                    (roles.weights.per_channel && roles.gradients.per_channel ? ", " : "") +
                                    (roles.gradients.per_channel ? "g" : "");
  if (first.scale != ScaleRule::fixed) {
    scales += per_channel ? " per output channel (" + channel_roles + "), the rest per tensor" : " per tensor";
  }
  const std::string zero_points = zero_point_roles(roles);
  if (!zero_points.empty()) scales += ", zero points (" + zero_points + ")";
  const ProductRoute forward = product_route(roles.activations, roles.weights, ChannelAxis::columns);
  const ProductRoute weight_grad = product_route(roles.activations, roles.errors);
  const ProductRoute input_grad = product_route(roles.errors, roles.weights, ChannelAxis::rows);
  std::string where = std::string(product_route_name(forward)) + " forward";
  if (weight_grad == input_grad) {
    where += weight_grad == forward ? " and backward" : std::string(", ") + product_route_name(weight_grad) + " backward";
  } else {
    where += std::string(", dW ") + product_route_name(weight_grad) + ", dx " + product_route_name(input_grad);
  }
  if (forward == ProductRoute::fake_quantized || weight_grad == ProductRoute::fake_quantized ||
      input_grad == ProductRoute::fake_quantized) {
    where += roles.weights.per_channel && roles.errors.quantized() && input_grad == ProductRoute::fake_quantized &&
                     forward != ProductRoute::fake_quantized
                 ? " (fake: f32 on the grids; per-channel weights vary along dx's summed axis)"
                 : " (fake: f32 on the grids, an f32 role)";
  }
  return bits + " (" + rounding + "); " + scales + (roles.stored_weights ? ", weights stored so (no f32 master)" : "") +
         "; " + where;
}

}  // namespace rg
