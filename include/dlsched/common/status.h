#pragma once

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dlsched {

// The kinds of fault a Status carries. The REST layer maps them to HTTP codes
// (kInvalidArgument -> 400, kNotFound -> 404, kAlreadyExists/kFailedPrecondition -> 409,
// kResourceExhausted -> 429, kUnavailable -> 503, everything else -> 500).
enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kResourceExhausted,
  kUnavailable,
  kInternal,
  kIoError,
};

std::string_view StatusCodeName(StatusCode code);

// A fault as a value. Our code returns Status instead of throwing. "Does not fit" is an outcome
// (see Fit), never a Status.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: <message>", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>"; used to add context on the way up.
  Status WithPrefix(std::string_view prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status NotFound(std::string message) {
  return Status(StatusCode::kNotFound, std::move(message));
}
inline Status FailedPrecondition(std::string message) {
  return Status(StatusCode::kFailedPrecondition, std::move(message));
}
inline Status AlreadyExists(std::string message) {
  return Status(StatusCode::kAlreadyExists, std::move(message));
}
inline Status Internal(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}
inline Status IoError(std::string message) {
  return Status(StatusCode::kIoError, std::move(message));
}

// Either a value or a non-OK Status (an std::expected-shaped type; C++20 has none).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : data_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : data_(std::move(status)) {  // NOLINT: implicit by design
    if (std::get<Status>(data_).ok()) data_ = Status(StatusCode::kInternal, "Result from OK");
  }

  bool ok() const { return std::holds_alternative<T>(data_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(data_);
  }
  T& value() & { return std::get<T>(data_); }
  const T& value() const& { return std::get<T>(data_); }
  T&& value() && { return std::get<T>(std::move(data_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> data_;
};

namespace internal {

// Streams a message, then aborts with it on destruction. Backs DS_CHECK.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    stream_ << file << ":" << line << ": check failed: " << condition << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::cerr << stream_.str() << std::endl;
    std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

inline const Status& AsStatus(const Status& s) { return s; }
template <typename T>
const Status& AsStatus(const Result<T>& r) {
  return r.status();
}

}  // namespace internal
}  // namespace dlsched

#define DS_CONCAT_INNER(a, b) a##b
#define DS_CONCAT(a, b) DS_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is not OK.
#define DS_RETURN_IF_ERROR(expr)                                          \
  do {                                                                    \
    ::dlsched::Status ds_status_ = ::dlsched::internal::AsStatus((expr)); \
    if (!ds_status_.ok()) return ds_status_;                              \
  } while (false)

// `DS_ASSIGN_OR_RETURN(T x, ResultExpr)` declares x from the Result's value, or returns its
// Status from the enclosing function.
#define DS_ASSIGN_OR_RETURN(lhs, expr) \
  DS_ASSIGN_OR_RETURN_IMPL(DS_CONCAT(ds_result_, __LINE__), lhs, expr)
#define DS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()

// An invariant of our own code; always on. Never use it on anything user input can trigger.
#define DS_CHECK(condition) \
  if (condition) {          \
  } else                    \
    ::dlsched::internal::CheckFailure(__FILE__, __LINE__, #condition).stream()
