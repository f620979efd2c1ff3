// Weight initialisers. He (Kaiming) for ReLU-family layers, Glorot (Xavier) for the rest;
// each in a uniform and a normal form, all drawn from the layer's Rng; `dcgan` is the
// N(0, 0.02) of Radford et al. (2016), whatever the fans.
#pragma once

#include <string>

#include "base/rng.h"
#include "base/status.h"
#include "tensor/tensor.h"

namespace rg {

enum class Init { he_uniform, he_normal, glorot_uniform, glorot_normal, dcgan_normal, zeros };

class CfgSection;

Result<Init> init_from_name(const std::string& name);  // "he", "he_normal", "glorot", ...
// A layer section's `init = ...` key (he when absent); the error names the file, line and key.
Result<Init> init_from_section(const CfgSection& section);
const char* init_name(Init init);

// Fills w (f32 or f64) for a layer with the given fan-in and fan-out.
void initialise(const Tensor& w, Init init, int64_t fan_in, int64_t fan_out, Rng& rng);

}  // namespace rg
