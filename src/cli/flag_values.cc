#include "cli/flag_values.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

namespace dlsched::cli {
namespace {

// A non-negative decimal number at the front of `text` (digits with at most one '.'); its length
// in `used`, or nullopt.
std::optional<double> LeadingNumber(std::string_view text, size_t& used) {
  size_t i = 0;
  bool dot = false;
  bool digit = false;
  while (i < text.size()) {
    const char c = text[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!digit) return std::nullopt;
  double value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + i, value);
  if (ec != std::errc() || ptr != text.data() + i || !std::isfinite(value)) return std::nullopt;
  used = i;
  return value;
}

std::optional<double> UnitSeconds(char unit) {
  switch (unit) {
    case 's':
      return 1.0;
    case 'm':
      return 60.0;
    case 'h':
      return 3600.0;
    case 'd':
      return 86400.0;
    default:
      return std::nullopt;
  }
}

}  // namespace

std::optional<double> ParseDurationSeconds(std::string_view text) {
  if (text.empty()) return std::nullopt;
  size_t used = 0;
  std::optional<double> first = LeadingNumber(text, used);
  if (!first) return std::nullopt;
  if (used == text.size()) return *first;  // plain seconds
  double total = 0;
  while (!text.empty()) {
    const std::optional<double> value = LeadingNumber(text, used);
    if (!value || used == text.size()) return std::nullopt;
    const std::optional<double> unit = UnitSeconds(text[used]);
    if (!unit) return std::nullopt;
    total += *value * *unit;
    text.remove_prefix(used + 1);
  }
  if (!std::isfinite(total)) return std::nullopt;
  return total;
}

bool HasDurationUnit(std::string_view text) {
  return ParseDurationSeconds(text).has_value() &&
         !std::isdigit(static_cast<unsigned char>(text.back())) && text.back() != '.';
}

CLI::Validator DurationFlag() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const std::optional<double> seconds = ParseDurationSeconds(value);
        if (!seconds) {
          return "want a duration: seconds (90) or a number with a unit s, m, h, d (30m, 2h, "
                 "1h30m), got '" +
                 value + "'";
        }
        value = fmt::format("{}", *seconds);
        return "";
      },
      "DURATION");
}

CLI::Validator IntegerAtLeast(int64_t min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        int64_t parsed = 0;
        const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
        if (ec != std::errc() || ptr != value.data() + value.size() || parsed < min) {
          return "want an integer >= " + std::to_string(min) + ", got '" + value + "'";
        }
        return "";
      },
      "INT>=" + std::to_string(min));
}

}  // namespace dlsched::cli
