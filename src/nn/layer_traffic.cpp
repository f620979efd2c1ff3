// The traffic shapes layers share (layer_traffic.h).
#include "nn/layer_traffic.h"

namespace rg {

LayerTraffic product_traffic(double in, double out, double params) {
  LayerTraffic t;
  t.forward = in + out;     // x read, y written
  t.backward = in + out;    // dW: x and dy read
  t.input_grad = out + in;  // dx: dy read, dx written
  t.param_forward = params;
  t.param_backward = params;  // dW written
  t.param_input_grad = params;
  t.params = params;
  return t;
}

LayerTraffic batch_norm_traffic(double values, double params) {
  LayerTraffic t;
  t.forward = 2 * values + values;
  t.backward = 2 * values;
  t.input_grad = 3 * values;
  t.param_forward = params;  // gamma, beta
  t.param_backward = params;
  t.param_input_grad = params / 2;  // gamma
  t.params = params;
  return t;
}

LayerTraffic elementwise_traffic(double values) {
  LayerTraffic t;
  t.forward = 2 * values;
  t.input_grad = 3 * values;
  return t;
}

LayerTraffic moving_traffic(double in, double out) {
  LayerTraffic t;
  t.forward = in + out;
  t.input_grad = out + in;
  return t;
}

}  // namespace rg
