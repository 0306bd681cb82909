#include "daemon/api/auth.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "dlsched/common/text.h"

namespace dlsched::daemon {
namespace {

// The blanks around a tokens-file line and its fields.
constexpr std::string_view kBlanks = " \t\r";

}  // namespace

Result<TokenTable> TokenTable::Parse(std::string_view text, std::string_view origin) {
  TokenTable table;
  std::map<std::string, int> without_account;  // user -> first line without a 4th column
  int line_no = 0;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = Trim(text.substr(0, end), kBlanks);
    text.remove_prefix(std::min(end + 1, text.size()));
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    const std::string where = std::string(origin) + ":" + std::to_string(line_no) + ": ";
    std::vector<std::string_view> fields = Split(line, ',');
    for (std::string_view& field : fields) field = Trim(field, kBlanks);
    if (fields.size() != 3 && fields.size() != 4) {
      return InvalidArgument(where + "want token,user,role[,unix_account]");
    }
    if (fields[0].empty()) return InvalidArgument(where + "empty token");
    if (fields[1].empty()) return InvalidArgument(where + "empty user");
    Principal principal{std::string(fields[1]), Role::kUser};
    if (fields[2] == "admin") {
      principal.role = Role::kAdmin;
    } else if (fields[2] != "user") {
      return InvalidArgument(where + "unknown role '" + std::string(fields[2]) +
                             "' (want user or admin)");
    }
    const std::string user(fields[1]);
    if (!table.by_token_.emplace(std::string(fields[0]), std::move(principal)).second) {
      return InvalidArgument(where + "duplicate token");
    }
    // Every line of a user agrees on the account: the first line with one decides, and a
    // line without one is checked when the table is complete.
    if (fields.size() == 4) {
      if (fields[3].empty()) return InvalidArgument(where + "empty unix_account");
      auto [it, inserted] = table.account_by_user_.emplace(user, std::string(fields[3]));
      if (!inserted && it->second != fields[3]) {
        return InvalidArgument(where + "user '" + user + "' has another unix_account ('" +
                               it->second + "') on an earlier line");
      }
    } else {
      without_account.emplace(user, line_no);
    }
  }
  for (const auto& [user, line] : without_account) {
    if (auto it = table.account_by_user_.find(user); it != table.account_by_user_.end()) {
      return InvalidArgument(std::string(origin) + ":" + std::to_string(line) + ": user '" + user +
                             "' has no unix_account here but '" + it->second + "' on another line");
    }
  }
  return table;
}

std::string TokenTable::AccountSpec(std::string_view user) const {
  auto it = account_by_user_.find(user);
  return it == account_by_user_.end() ? std::string(user) : it->second;
}

Status CheckTokensFileMode(const std::string& path, std::string& warning) {
  warning.clear();
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return NotFound("cannot read tokens file " + path + ": " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode))
    return InvalidArgument("tokens file " + path + " is not a regular file");
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    return InvalidArgument("tokens file " + path +
                           " may be written by other users (anyone could add an admin token); "
                           "chmod 600 it");
  }
  if (st.st_mode & (S_IRGRP | S_IROTH)) {
    warning = "WARNING: tokens file " + path +
              " may be read by other users (and by their jobs), who would learn every token, the "
              "admin ones included; chmod 600 it";
  }
  return Status::Ok();
}

Result<TokenTable> TokenTable::Load(const std::string& path) {
  const FileText file = ReadFileText(path);
  if (file.fault != FileFault::kNone) return NotFound("cannot read tokens file " + path);
  return Parse(file.text, path);
}

std::optional<Principal> TokenTable::Find(std::string_view token) const {
  auto it = by_token_.find(token);
  if (it == by_token_.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string_view> BearerToken(std::string_view header) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (header.size() <= kPrefix.size()) return std::nullopt;
  for (size_t i = 0; i < kPrefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) !=
        std::tolower(static_cast<unsigned char>(kPrefix[i]))) {
      return std::nullopt;
    }
  }
  const std::string_view token = Trim(header.substr(kPrefix.size()), kBlanks);
  if (token.empty()) return std::nullopt;
  return token;
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string h(host);
  in_addr v4{};
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, h.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

std::string_view HostOfHostHeader(std::string_view value) {
  value = Trim(value, kBlanks);
  if (!value.empty() && value.front() == '[') {
    const size_t close = value.find(']');
    return close == std::string_view::npos ? value : value.substr(0, close + 1);
  }
  const size_t colon = value.find(':');
  // name:port; several colons are an IPv6 address without brackets (and so without a port).
  if (colon != std::string_view::npos && value.rfind(':') == colon) return value.substr(0, colon);
  return value;
}

bool IsLoopbackOrigin(std::string_view origin) {
  origin = Trim(origin, kBlanks);
  size_t scheme_end = 0;
  for (std::string_view scheme : {"http://", "https://"}) {
    if (origin.substr(0, scheme.size()) == scheme) scheme_end = scheme.size();
  }
  if (scheme_end == 0) return false;
  std::string_view authority = origin.substr(scheme_end);
  if (authority.empty() || authority.find_first_of("/?#@") != std::string_view::npos) {
    return false;
  }
  return IsLoopbackHost(HostOfHostHeader(authority));
}

}  // namespace dlsched::daemon
