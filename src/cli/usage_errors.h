#pragma once

// Messages for command lines CLI11 refuses, better than its own where it blames the wrong word.

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dlsched::cli {

// The first argument of `args` (the words after the command's name, up to a "--") that looks
// like an option but is none of `command`'s, as "unknown option --nmae; did you mean --name?"
// (the suggestion only when one of the command's long names is a likely typo of it, by
// io/suggest.h's rule, or a short name differs from it only in case). Words that are the value
// of the option before them, and negative numbers, are not options. nullopt when every
// option-like word is known. Called after CLI11 refused the line with an ExtrasError, for every
// command.
std::optional<std::string> UnknownOptionMessage(const CLI::App& command,
                                                const std::vector<std::string>& args);

}  // namespace dlsched::cli
