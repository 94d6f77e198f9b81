#include "engine/ops/reduce_cuda.cuh"
#include "kernels/stats/stats.hpp"

TW_CUDA_REDUCE(tw::ops::Stats<1>);
TW_CUDA_REDUCE(tw::ops::Stats<3>);
TW_CUDA_HISTOGRAM(tw::ops::ChannelHistogram<1>);
TW_CUDA_HISTOGRAM(tw::ops::ChannelHistogram<3>);
