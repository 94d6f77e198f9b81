#include "tools/tilewave/batch_list.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>

#include "engine/error.hpp"
#include "engine/text.hpp"

namespace tw::cli {
namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// The file name without directory and extension (two-part ones such as
// .ome.tif whole); a synthetic: spec with its punctuation made safe.
std::string output_name(const std::string& input) {
  std::string n;
  if (input.rfind("synthetic:", 0) == 0) {
    for (char c : input) n += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
    return n;
  }
  const auto slash = input.find_last_of('/');
  n = slash == std::string::npos ? input : input.substr(slash + 1);
  bool cut = false;
  for (const char* two : {".ome.tif", ".ome.tiff", ".ome.btf"})
    if (!cut && ends_with_nocase(n, two)) n.resize(n.size() - std::strlen(two)), cut = true;
  if (!cut) {
    const auto dot = n.find_last_of('.');
    if (dot != std::string::npos && dot > 0) n.resize(dot);
  }
  return n.empty() || n == "." || n == ".." ? "slide" : n;
}

uint64_t weight_of(const std::string& input) {
  if (input.rfind("synthetic:", 0) == 0) {
    unsigned long long w = 0, h = 0;
    if (std::sscanf(input.c_str() + 10, "%llux%llu", &w, &h) == 2) return static_cast<uint64_t>(w) * h * 3;
    return 0;
  }
  struct stat st {};
  // A missing slide weighs nothing: it fails when its turn comes, and is
  // reported with the others' results.
  return ::stat(input.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

std::vector<BatchSlide> read_batch_list(const std::string& list, const std::string& outdir) {
  struct stat st {};
  if (::stat(list.c_str(), &st) != 0) throw InputError("cannot open slide list " + list + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw InputError("slide list " + list + " is not a regular file");
  if (st.st_size > (off_t{16} << 20)) throw InputError(list + " is over 16 MiB: not a slide list");
  std::ifstream f(list);
  if (!f) throw InputError("cannot read slide list " + list);
  std::vector<BatchSlide> slides;
  std::map<std::string, size_t> by_name;
  std::string line;
  for (size_t n = 1; std::getline(f, line); ++n) {
    const std::string in = trim(line);
    if (in.empty() || in[0] == '#') continue;
    BatchSlide s;
    s.line = n, s.input = in, s.name = output_name(in);
    s.output = outdir + (outdir.empty() || outdir.back() == '/' ? "" : "/") + s.name + ".tif";
    s.weight = weight_of(in);
    const auto [it, fresh] = by_name.emplace(s.name, n);
    if (!fresh)
      throw InputError(list + ": lines " + std::to_string(it->second) + " and " + std::to_string(n) +
                       " would both write " + s.output + " (rename one of the slides)");
    slides.push_back(std::move(s));
  }
  if (f.bad()) throw InputError("cannot read slide list " + list);
  if (slides.empty()) throw InputError("slide list " + list + " names no slides");
  std::stable_sort(slides.begin(), slides.end(),
                   [](const BatchSlide& a, const BatchSlide& b) { return a.weight > b.weight; });
  return slides;
}

}  // namespace tw::cli
