#pragma once
// The slides of a batch: a list file with one input a line, each slide's
// output name (OUTDIR/NAME.tif), and the order ranks take them in (largest
// first, so the long ones start early and the short ones fill the gaps).
#include <cstdint>
#include <string>
#include <vector>

namespace tw::cli {

struct BatchSlide {
  size_t line = 0;      // 1-based line of the list
  std::string input;    // as written in the list
  std::string name;     // output name without its extension
  std::string output;   // OUTDIR/NAME.tif
  uint64_t weight = 0;  // bytes of the file (pixels x 3 for synthetic:), for the order
};

// Reads LIST (blank lines and '#' comments skipped; a line is one path, spaces
// kept), names each output after its input's file name without extension, and
// sorts largest first (list order among equals). Throws InputError for an
// unreadable list, an empty one, or two inputs that would write one output.
std::vector<BatchSlide> read_batch_list(const std::string& list, const std::string& outdir);

}  // namespace tw::cli
