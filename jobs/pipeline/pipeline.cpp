#include "jobs/pipeline/pipeline.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

namespace tw {
namespace {

bool is_name(const std::string& s) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

std::string command_words(const OpDef& op) {
  std::string s;
  for (const auto& w : op.command) s += (s.empty() ? "" : " ") + w;
  return s;
}

const ParamSpec* find_param(const OpDef& op, const std::string& name) {
  for (const ParamSpec& p : op.params)
    if (p.name == name) return &p;
  return nullptr;
}

// Options of the whole run, which a step cannot set for itself.
bool is_run_option(const std::string& name) {
  static const char* const kRun[] = {"tile",    "memory",      "threads",     "device", "gpu-memory", "report",
                                     "quality", "compression", "subsampling", "level",  "min-size",   "keep"};
  for (const char* r : kRun)
    if (name == r) return true;
  return false;
}

}  // namespace

std::string PipelineStep::label() const {
  std::string s = "step " + std::to_string(number);
  if (!name.empty()) s += " '" + name + "'";
  if (op) s += " (" + command_words(*op) + ")";
  return s;
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (in_word) words.push_back(cur), cur.clear(), in_word = false;
    } else if (c == '#' && !in_word) {
      break;  // a comment to the end of the line
    } else if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == std::string::npos) throw ParamError("unclosed ' in \"" + text + "\"");
      cur += text.substr(i + 1, end - i - 1), in_word = true, i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() && (text[j + 1] == '"' || text[j + 1] == '\\')) ++j;
        cur += text[j];
      }
      if (j >= text.size()) throw ParamError("unclosed \" in \"" + text + "\"");
      in_word = true, i = j;
    } else if (c == '\\' && i + 1 < text.size()) {
      cur += text[++i], in_word = true;
    } else {
      cur += c, in_word = true;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

PipelineStep parse_step(const std::string& text, int number) {
  PipelineStep st;
  st.number = number;
  st.text = text;
  const std::string where = "step " + std::to_string(number);
  std::vector<std::string> w;
  try {
    w = split_words(text);
  } catch (const ParamError& e) {
    throw ParamError(where + ": " + e.what());
  }
  size_t i = 0;
  if (!w.empty() && w[0].size() > 1 && w[0].back() == ':') {
    st.name = w[0].substr(0, w[0].size() - 1);
    if (!is_name(st.name) || st.name == "input")
      throw ParamError(where + ": '" + st.name +
                       "' cannot name a result (a letter, then letters, digits, '_' or '-'; not 'input')");
    i = 1;
  }
  if (i >= w.size()) throw ParamError(where + " is empty" + (st.name.empty() ? "" : " after its name"));
  const OpRegistry& reg = op_registry();
  // A family's op takes two words ("filter gaussian"); find_command also
  // matches a one-word command followed by anything ("reconstruct m g").
  if (i + 1 < w.size()) {
    st.op = reg.find_command({w[i], w[i + 1]});
    if (st.op && st.op->command.size() != 2) st.op = nullptr;
  }
  if (st.op) {
    i += 2;
  } else {
    st.op = reg.find_command({w[i]});
    if (!st.op) {
      // A family's word alone, or an unknown one.
      const bool family = [&] {
        for (const auto& op : reg.all())
          if (op->command.size() == 2 && op->command[0] == w[i]) return true;
        return false;
      }();
      if (family)
        throw ParamError(where + ": unknown " + w[i] + " op '" + (i + 1 < w.size() ? w[i + 1] : "") +
                         "' (see tilewave " + w[i] + " --help)");
      throw ParamError(where + ": unknown op '" + w[i] + "' (see tilewave ops)");
    }
    ++i;
  }
  st.params = st.op->params_for();
  const std::string who = st.label();
  for (; i < w.size(); ++i) {
    const std::string& a = w[i];
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string key = a.substr(2), value;
      bool has_value = false;
      if (const size_t eq = key.find('='); eq != std::string::npos)
        value = key.substr(eq + 1), key = key.substr(0, eq), has_value = true;
      const ParamSpec* p = find_param(*st.op, key);
      if (!p) {
        if (is_run_option(key))
          throw ParamError(who + ": --" + key + " applies to the whole run; give it outside the steps");
        throw ParamError(who + ": unknown option --" + key + " (see tilewave " + command_words(*st.op) + " --help)");
      }
      if (p->kind == ParamSpec::Kind::kFlag) {
        if (has_value) throw ParamError(who + ": --" + key + " takes no value");
        value = "1";
      } else if (!has_value) {
        if (i + 1 >= w.size()) throw ParamError(who + ": --" + key + " needs a value (" + p->placeholder + ")");
        value = w[++i];
      }
      if (st.params.has(key)) throw ParamError(who + ": --" + key + " given twice");
      try {
        st.params.set(key, value);
      } catch (const ParamError& e) {
        throw ParamError(who + ": " + e.what());
      }
    } else {
      st.refs.push_back(a);
    }
  }
  try {
    st.params.check_all();
    if (st.op->validate) st.op->validate(st.params);
  } catch (const ParamError& e) {
    throw ParamError(who + ": " + e.what());
  }
  return st;
}

// Streamed steps read through one another, a few stack frames each: a chain
// of several thousand overflowed the stack (5000 inverts). A thousand is
// far more than any real chain and leaves room for the heaviest op's frames.
constexpr size_t kMaxSteps = 1000;

Pipeline parse_pipeline(const std::vector<std::string>& steps) {
  if (steps.size() > kMaxSteps)
    throw InputError("a pipeline of " + std::to_string(steps.size()) + " steps: at most " + std::to_string(kMaxSteps) +
                     " are taken");
  Pipeline p;
  int n = 0;
  for (const auto& s : steps) p.steps.push_back(parse_step(s, ++n));
  return p;
}

// A step is a command line; one longer than this is not one (and would be
// echoed whole into the message that refuses it).
constexpr size_t kMaxStepChars = 4096;

std::vector<std::string> read_pipeline_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError("cannot open pipeline file " + path + ": " + std::strerror(errno));
  // A FIFO would block for ever, a device never end.
  if (!S_ISREG(st.st_mode)) throw InputError("pipeline file " + path + " is not a regular file");
  if (st.st_size > (off_t{1} << 20)) throw InputError(path + " is over 1 MiB: not a pipeline file");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError("cannot read pipeline file " + path);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw InputError("cannot read pipeline file " + path);
  // A binary file (an image given by mistake) is refused before its bytes
  // reach a message; an editor's byte-order mark is not part of the first step.
  const size_t nul = text.find('\0');
  if (nul != std::string::npos)
    throw InputError("pipeline file " + path + " holds binary data (a NUL byte at offset " + std::to_string(nul) +
                     "): not a text file of steps");
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  std::vector<std::string> steps;
  size_t at = 0, number = 0;
  while (at < text.size()) {
    // Lines end in \n, \r\n or a lone \r (old Mac editors).
    size_t end = text.find_first_of("\r\n", at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + (text.compare(end, 2, "\r\n") == 0 ? 2 : 1);
    ++number;
    if (line.size() > kMaxStepChars)
      throw InputError("pipeline file " + path + ": line " + std::to_string(number) + " has " +
                       std::to_string(line.size()) + " characters (at most " + std::to_string(kMaxStepChars) +
                       "): not a step");
    // Blank and comment lines are skipped; a line that does not split (an
    // open quote) is kept, for parse_step to refuse with its step number.
    bool blank = false;
    try {
      blank = split_words(line).empty();
    } catch (const ParamError&) {
    }
    if (!blank) steps.push_back(line);
  }
  return steps;
}

}  // namespace tw
