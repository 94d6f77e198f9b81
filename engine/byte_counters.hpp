#pragma once
// Bytes a run moves that cost time but do not show in its output: tiles
// spilled to scratch files, and copies between host and device. Counted per
// thread and for the whole process, so a pipeline's report can say which
// step moved them (a step's reads run on the thread that asked for them).
#include <cstddef>
#include <cstdint>

namespace tw {

struct ByteCounts {
  uint64_t spilled = 0;     // written to scratch files
  uint64_t uploaded = 0;    // host to device
  uint64_t downloaded = 0;  // device to host
  ByteCounts& operator+=(const ByteCounts& o) {
    spilled += o.spilled, uploaded += o.uploaded, downloaded += o.downloaded;
    return *this;
  }
  ByteCounts operator-(const ByteCounts& o) const {
    return {spilled - o.spilled, uploaded - o.uploaded, downloaded - o.downloaded};
  }
};

void count_spilled(size_t bytes);
void count_uploaded(size_t bytes);
void count_downloaded(size_t bytes);

ByteCounts thread_byte_counts();   // this thread's, since it started
ByteCounts process_byte_counts();  // every thread's

// A read that runs its pieces on worker threads (a GPU op's, in parallel)
// hands what they moved to the thread that asked for it, so that a step's
// report still counts those bytes and a worker's own read does not: each
// piece takes its thread's counts since `before` out of that thread's, and
// the asking thread adds them to its own (the process's already hold them).
ByteCounts take_thread_counts_since(const ByteCounts& before);
void add_thread_counts(const ByteCounts& moved);

}  // namespace tw
