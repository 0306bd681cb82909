#include "daemon/api/progress_request.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace dlsched::daemon {
namespace {

using nlohmann::json;

Status FieldError(std::string_view field, std::string_view message) {
  return InvalidArgument(std::string(field) + ": " + std::string(message));
}

}  // namespace

Result<Progress> ParseProgressReport(std::string_view body) {
  json doc;
  try {
    doc = json::parse(body.begin(), body.end());
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("body: malformed JSON: ") + e.what());
  }
  if (!doc.is_object()) return InvalidArgument("body: must be a JSON object");
  for (const auto& [key, value] : doc.items()) {
    if (key != "iterations_done" && key != "iterations_total") {
      return FieldError(key, "unknown field (want iterations_done, iterations_total)");
    }
  }
  Progress progress;
  if (!doc.contains("iterations_done")) return FieldError("iterations_done", "is required");
  const json& done = doc["iterations_done"];
  if (!done.is_number() || !std::isfinite(done.get<double>()) || done.get<double>() < 0) {
    return FieldError("iterations_done", "must be a number >= 0");
  }
  progress.done = done.get<double>();
  if (doc.contains("iterations_total") && !doc["iterations_total"].is_null()) {
    const json& total = doc["iterations_total"];
    if (!total.is_number() || !std::isfinite(total.get<double>()) || total.get<double>() <= 0) {
      return FieldError("iterations_total", "must be a number > 0 (or null: the job's iterations)");
    }
    progress.total = total.get<double>();
  }
  return progress;
}

}  // namespace dlsched::daemon
