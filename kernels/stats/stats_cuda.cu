#include "engine/ops/reduce_cuda.cuh"
#include "kernels/stats/stats.hpp"

TW_CUDA_REDUCE(tw::kernels::Stats<1>);
TW_CUDA_REDUCE(tw::kernels::Stats<3>);
TW_CUDA_HISTOGRAM(tw::kernels::ChannelHistogram<1>);
TW_CUDA_HISTOGRAM(tw::kernels::ChannelHistogram<3>);
