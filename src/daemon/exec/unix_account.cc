#include "daemon/exec/unix_account.h"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <climits>

namespace dlsched::daemon {
namespace {

// A passwd entry with its strings copied out of getpw*_r's buffer.
struct PasswdEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

template <typename Lookup>
std::optional<PasswdEntry> LookUp(Lookup lookup) {
  std::vector<char> buffer(16384);
  passwd pw{};
  passwd* found = nullptr;
  while (true) {
    const int rc = lookup(&pw, buffer.data(), buffer.size(), &found);
    if (rc == ERANGE && buffer.size() < (1u << 20)) {
      buffer.resize(buffer.size() * 4);
      continue;
    }
    if (rc != 0 || found == nullptr) return std::nullopt;
    return PasswdEntry{pw.pw_name, pw.pw_uid, pw.pw_gid, pw.pw_dir ? pw.pw_dir : ""};
  }
}

std::optional<uint32_t> ParseId(std::string_view text) {
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  // (uid_t)-1 means "unchanged" to setuid/setresuid: never an account.
  if (value == UINT32_MAX) return std::nullopt;
  return value;
}

std::vector<gid_t> GroupsOf(const std::string& name, gid_t gid) {
  int count = 32;
  std::vector<gid_t> groups(count);
  while (getgrouplist(name.c_str(), gid, groups.data(), &count) < 0) {
    if (count <= static_cast<int>(groups.size())) count = static_cast<int>(groups.size()) * 2;
    groups.resize(count);
  }
  groups.resize(count);
  return groups;
}

}  // namespace

Result<UnixAccount> ResolveUnixAccount(std::string_view spec) {
  if (spec.empty()) return InvalidArgument("empty Unix account");
  UnixAccount account;
  if (spec.front() >= '0' && spec.front() <= '9') {
    const size_t colon = spec.find(':');
    const std::optional<uint32_t> uid = ParseId(spec.substr(0, colon));
    const std::optional<uint32_t> gid =
        colon == std::string_view::npos ? std::nullopt : ParseId(spec.substr(colon + 1));
    if (!uid || (colon != std::string_view::npos && !gid)) {
      return InvalidArgument("Unix account '" + std::string(spec) + "': want NAME, UID or UID:GID");
    }
    account.uid = *uid;
    const std::optional<PasswdEntry> entry =
        LookUp([&](passwd* pw, char* buf, size_t len, passwd** out) {
          return getpwuid_r(account.uid, pw, buf, len, out);
        });
    account.gid = gid ? *gid : entry ? entry->gid : account.uid;
    account.name = entry ? entry->name : std::to_string(account.uid);
    account.home = entry ? entry->home : "";
    account.groups = entry && entry->gid == account.gid ? GroupsOf(entry->name, account.gid)
                                                        : std::vector<gid_t>{account.gid};
    return account;
  }
  const std::string name(spec);
  const std::optional<PasswdEntry> entry =
      LookUp([&](passwd* pw, char* buf, size_t len, passwd** out) {
        return getpwnam_r(name.c_str(), pw, buf, len, out);
      });
  if (!entry) return NotFound("no Unix user '" + name + "'");
  account.uid = entry->uid;
  account.gid = entry->gid;
  account.name = entry->name;
  account.home = entry->home;
  account.groups = GroupsOf(entry->name, entry->gid);
  return account;
}

bool RunningAsRoot() { return geteuid() == 0; }

}  // namespace dlsched::daemon
