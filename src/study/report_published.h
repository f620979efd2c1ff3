// The published figures the study follows, shown beside ours in the report: the thesis's
// measurements of TensorFlow 2.0.0, PyTorch 1.4.0 and MXNet 1.5.0 training a CIFAR-10 CNN on an
// NVIDIA GTX 1060 (Jiaqi Yin, "Measurement of machine learning performance with different
// condition and hyperparameter", M.S. thesis, The Ohio State University, 2020). Another network,
// other data and other hardware: for the shape of the curves, never a like-for-like comparison.
#pragma once

#include <string>
#include <vector>

#include "report/svg_chart.h"
#include "study/report_doc.h"

namespace rg::report {

// One line naming the source and saying what differs (the first published table and the method
// section hold it); the short form for the other tables' notes.
std::string published_source();
std::string published_source_short();

// Table 5: steps/s at batch 128 on the GPU and on the CPU, per framework.
Table published_gpu_cpu_table();
// Tables 6-8: steps/s over batch sizes 4..1024 on the GPU, per framework.
Table published_batch_speed_table();
// Table 10: accuracy after 10 epochs over batch sizes (TensorFlow).
Table published_batch_accuracy_table();
// Table 9: accuracy after 10 epochs, time and epochs to 60% over learning rates (TensorFlow).
Table published_lr_table();

// Table 9's and Table 10's accuracies as chart series (x: learning rate or batch; y: %), named as
// published figures, to draw dashed beside ours.
ChartSeries published_lr_accuracy_series();
ChartSeries published_batch_accuracy_series();

}  // namespace rg::report
