// What a layer moves through memory in one training step: the byte side of the roofline
// (report/roofline.h says the model and how a step's uses of a layer add up). Each layer gives
// its own (Layer::traffic); the shapes every kind shares are built here.
#pragma once

namespace rg {

// The values (not bytes) one layer moves. Activations per sample; parameters per step.
struct LayerTraffic {
  double forward = 0;           // a forward's activations
  double backward = 0;          // a backward's, without dx
  double input_grad = 0;        // what computing dx adds to a backward
  double param_forward = 0;     // parameter values a forward reads
  double param_backward = 0;    // a backward's: gradients written (and what it re-reads inside)
  double param_input_grad = 0;  // weights read for dx
  double params = 0;            // trainable values: what an accumulating backward also reads and
                                // the optimizer updates
};

// A product layer (dense, conv, conv_transpose) of `in` and `out` values a sample and `params`
// trainable values: y = x W; dW = x^T dy; dx = dy W^T. Each GEMM streams its operands once; the
// bias and its gradient ride along with y and dW.
LayerTraffic product_traffic(double in, double out, double params);
// Batch norm over `values` per sample (batch_norm.cpp): forward reads x for the statistics (one
// pass: each block's second pass is in cache) and again to normalise, writes y; backward reads dy
// and x for the two sums, then dy and x again to write dx. A relu it runs (Model::fuses_relu_after)
// adds nothing: it is applied as y is written and its gradient as dy is read.
LayerTraffic batch_norm_traffic(double values, double params);
// An elementwise layer of `values` whose backward reads dy and one of x or y and writes dx
// (relu, leaky_relu from x; sigmoid, tanh and softmax from y): without dx it does nothing.
LayerTraffic elementwise_traffic(double values);
// A layer that moves values without a derivative to read (dropout draws its mask again;
// reshape, upsample, average pools): x read and y written, then dy read and dx written.
LayerTraffic moving_traffic(double in, double out);

}  // namespace rg
