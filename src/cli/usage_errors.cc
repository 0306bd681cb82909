#include "cli/usage_errors.h"

#include <CLI/CLI.hpp>
#include <cctype>

#include "io/suggest.h"

namespace dlsched::cli {
namespace {

// The option of `command` (or of an app above it, where options such as --help live) named
// `name` ("--json", "-q"), or nullptr.
const CLI::Option* FindOption(const CLI::App& command, const std::string& name) {
  for (const CLI::App* app = &command; app != nullptr; app = app->get_parent()) {
    if (const CLI::Option* opt = app->get_option_no_throw(name)) return opt;
  }
  return nullptr;
}

bool LooksLikeOption(const std::string& word) {
  if (word.size() < 2 || word[0] != '-') return false;
  const char next = word[1] == '-' && word.size() > 2 ? word[2] : word[1];
  return !std::isdigit(static_cast<unsigned char>(next)) && next != '.' && next != '-';
}

}  // namespace

std::optional<std::string> UnknownOptionMessage(const CLI::App& command,
                                                const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") break;
    if (!LooksLikeOption(word)) continue;
    const size_t eq = word.find('=');
    const std::string name = word.substr(0, eq);
    if (const CLI::Option* opt = FindOption(command, name)) {
      // Its value is the next word unless given with '='; a flag takes none.
      if (eq == std::string::npos && opt->get_expected_min() > 0) ++i;
      continue;
    }
    const bool is_long = name.starts_with("--");
    std::vector<std::string> candidates;
    for (const CLI::Option* opt : command.get_options()) {
      for (const std::string& n : is_long ? opt->get_lnames() : opt->get_snames()) {
        candidates.push_back(n);
      }
    }
    std::string message = "unknown option " + name;
    const std::string typed = name.substr(is_long ? 2 : 1);
    std::optional<std::string> close = ClosestName(typed, candidates);
    // Any one letter is one edit from any other: suggest a short option only for a change of
    // case ("-Q" for "-q").
    if (close && !is_long && EditDistanceIgnoringCase(typed, *close) != 0) close.reset();
    if (close) message += "; did you mean " + std::string(is_long ? "--" : "-") + *close + "?";
    return message;
  }
  return std::nullopt;
}

}  // namespace dlsched::cli
