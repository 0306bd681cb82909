#pragma once

// Bearer-token authentication for the REST API. The tokens file (`serve --tokens FILE`) has one
// `token,user,role[,unix_account]` line per token; role is `user` or `admin`; blank lines and
// lines starting with '#' are ignored. A user sees and cancels only their own jobs; an admin
// sees and cancels all. Without a tokens file there is no authentication and every caller acts
// as an admin, so the daemon then listens on loopback addresses only.
//
// `unix_account` is the Unix account the user's jobs run as when the daemon runs as root: a
// user name or a numeric `uid` or `uid:gid` (ResolveUnixAccount). Without it, the Unix user of
// the same name as the dlsched user. Every line of one user names the same account (or none).
// The file holds the admin tokens: `serve` refuses one that others may write and warns about
// one that others may read (docs/security.md).

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"

namespace dlsched::daemon {

enum class Role { kUser, kAdmin };

struct Principal {
  std::string user;  // empty when authentication is off
  Role role = Role::kAdmin;

  bool admin() const { return role == Role::kAdmin; }
  // May this caller see or cancel a job of `owner`?
  bool MayAccess(std::string_view owner) const { return admin() || owner == user; }
};

class TokenTable {
 public:
  // Parses the file format above. InvalidArgument names "<origin>:<line>" on a malformed line,
  // an unknown role, an empty token or user, or a duplicate token.
  static Result<TokenTable> Parse(std::string_view text, std::string_view origin);
  // Reads and parses a file; NotFound if it cannot be read.
  static Result<TokenTable> Load(const std::string& path);

  // The principal a token stands for.
  std::optional<Principal> Find(std::string_view token) const;
  size_t size() const { return by_token_.size(); }
  // The Unix account spec `user`'s jobs run as: the 4th column of their lines, else `user`.
  std::string AccountSpec(std::string_view user) const;

 private:
  std::map<std::string, Principal, std::less<>> by_token_;
  std::map<std::string, std::string, std::less<>> account_by_user_;  // users with a 4th column
};

// Why the tokens file at `path` is unsafe to use: InvalidArgument when a user other than its
// owner may write it (anyone could make themselves an admin), or when it is not a regular file.
// Otherwise OK, with `warning` set when others may read it (they would learn the tokens).
Status CheckTokensFileMode(const std::string& path, std::string& warning);

// The token of an `Authorization: Bearer <token>` header value, or nullopt.
std::optional<std::string_view> BearerToken(std::string_view header);

// True for 127.0.0.0/8, ::1, localhost and [::1].
bool IsLoopbackHost(std::string_view host);

// The host of a Host header value, without its port: "[::1]:8642" -> "[::1]",
// "localhost:8642" -> "localhost"; a value with several colons is an unbracketed IPv6 address
// and taken whole ("::1").
std::string_view HostOfHostHeader(std::string_view value);

// True for an Origin header naming a loopback host (IsLoopbackHost) over http or https, any
// port: "http://127.0.0.1:8642", "http://localhost", "http://[::1]:3000". False for "null".
bool IsLoopbackOrigin(std::string_view origin);

}  // namespace dlsched::daemon
