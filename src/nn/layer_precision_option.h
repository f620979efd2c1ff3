// train --layer-precision conv1=w8a8e8,dense3=fp32: each named layer's `precision` key set in
// the model's cfg text (replaced where the section has one), so that checkpoints, a model's
// copies (the precision report's rows) and resumed runs carry it as a cfg file would. The edited
// text is named "<file> (as --layer-precision edited it)": an inserted line moves the lines after
// it, and messages then cite the edited text's lines.
#pragma once

#include <string>

#include "base/status.h"
#include "nn/cfg.h"

namespace rg {

// `doc` with the keys of `list` ("NAME=PRECISION,..."): every name a layer of the model, each
// once, of a kind a precision applies to, each precision valid (nn/layer_registry.h's
// own_precision_from_name); an error names the entry and the rule, and `doc` is left as it was.
Result<CfgDocument> with_layer_precisions(const CfgDocument& doc, const std::string& list);

}  // namespace rg
