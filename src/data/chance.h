// What a model that learned nothing from its inputs scores on a dataset: the yardsticks a
// trained model's test figure is compared with to tell learning from chance. Computed once,
// after training (never per step).
#pragma once

#include "base/status.h"
#include "data/dataset.h"

namespace rg {

// The accuracy of the best constant answer on `test`: the largest share of one class among its
// labels. A network that answers one class whatever its input (collapsed, or not yet trained)
// scores at most this; it is 1 / classes on balanced data and more on unbalanced data. 0 for
// an empty set.
double best_constant_accuracy(const Dataset& test);

// The mean squared error (per value, as an autoencoder's test MSE) of answering every sample
// of `test` with the per-feature mean of `train`'s samples: what an autoencoder scores by
// reproducing the average image. One pass over each set, in blocks (streamed sets read from
// disk); the error of a failed read names the file. `train` and `test` have one sample shape.
Result<double> mean_answer_mse(const Dataset& train, const Dataset& test);

// The chance figure in a model's own terms: a classifier's (`classifies`) best constant
// accuracy on `test`, else an autoencoder's MSE of answering `train`'s mean on `test`.
Result<double> chance_quality(bool classifies, const Dataset& train, const Dataset& test);

}  // namespace rg
