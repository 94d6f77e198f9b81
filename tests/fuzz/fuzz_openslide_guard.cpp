// fuzz_openslide_guard: the checks that keep a file from reaching OpenSlide
// when it would abort the process (io/openslide/openslide_guard.hpp). The
// input is a file; the structure check (libtiff, no pixels) runs on every
// input, and for one input in sixteen the whole guard, whose child process
// opens the file with OpenSlide and reads a pixel of each level: the child
// may crash, the fuzzer's process must not. InputError is the expected
// outcome for a refused file.
#include "io/openslide/openslide_guard.hpp"
#include "tests/fuzz/fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tw;
  if (size > fuzz::kMaxInputBytes) return -1;
  static fuzz::MemFile file;
  const std::string& path = file.write(data, size);
  const std::string problem = tiff_problem_for_openslide(path);
  if (problem.find('\n') != std::string::npos) fuzz::finding("the guard's reason is not one line");
  if (size > 0 && (data[0] & 15) == 0) {
    try {
      check_before_openslide(path, 5);
    } catch (const InputError& e) {
      fuzz::expected(e);
    }
  }
  return 0;
}
