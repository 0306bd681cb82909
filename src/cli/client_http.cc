#include "cli/client_http.h"

#include <httplib.h>

#include <cstdlib>

namespace dlsched::cli {
namespace {

constexpr const char* kDefaultServer = "http://127.0.0.1:8642";

HttpResponse Convert(const httplib::Response& res) {
  HttpResponse out;
  out.status = res.status;
  out.body = res.body;
  for (const char* name : {"X-Next-Offset", "X-Job-State", "Location"}) {
    if (res.has_header(name)) out.headers[name] = res.get_header_value(name);
  }
  return out;
}

}  // namespace

std::string ServerUrl(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("DLSCHED_SERVER"); env && *env) return env;
  return kDefaultServer;
}

std::string ClientToken(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("DLSCHED_TOKEN"); env && *env) return env;
  return "";
}

RestClient::RestClient(std::string url, std::unique_ptr<httplib::Client> client)
    : url_(std::move(url)), client_(std::move(client)) {}

RestClient::~RestClient() = default;

Result<std::unique_ptr<RestClient>> RestClient::Create(const std::string& url,
                                                       const std::string& token) {
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.rfind("http://", 0) != 0) {
    return InvalidArgument("--server: want http://HOST:PORT, got '" + url + "'");
  }
  try {
    auto client = std::make_unique<httplib::Client>(base);
    if (!client->is_valid()) return InvalidArgument("--server: cannot use '" + url + "'");
    client->set_connection_timeout(std::chrono::seconds(5));
    client->set_read_timeout(std::chrono::seconds(60));
    client->set_keep_alive(true);
    // httplib writes headers and body separately: without TCP_NODELAY, Nagle's algorithm and
    // the server's delayed ACK add ~40 ms to every POST.
    client->set_tcp_nodelay(true);
    if (!token.empty()) client->set_bearer_token_auth(token);
    return std::unique_ptr<RestClient>(new RestClient(base, std::move(client)));
  } catch (const std::exception& e) {
    return InvalidArgument("--server: " + std::string(e.what()));
  }
}

Status RestClient::Failure(std::string_view what) const {
  return IoError("cannot reach the dlsched server at " + url_ + " (" + std::string(what) +
                 "); is `dlsched serve` running? (--server or DLSCHED_SERVER)");
}

Result<HttpResponse> RestClient::Get(const std::string& path) {
  try {
    httplib::Result res = client_->Get(path);
    if (!res) return Failure(httplib::to_string(res.error()));
    return Convert(*res);
  } catch (const std::exception& e) {
    return Failure(e.what());
  }
}

Result<HttpResponse> RestClient::Post(const std::string& path, const std::string& json_body) {
  try {
    httplib::Result res = client_->Post(path, json_body, "application/json");
    if (!res) return Failure(httplib::to_string(res.error()));
    return Convert(*res);
  } catch (const std::exception& e) {
    return Failure(e.what());
  }
}

Result<HttpResponse> RestClient::Delete(const std::string& path) {
  try {
    httplib::Result res = client_->Delete(path);
    if (!res) return Failure(httplib::to_string(res.error()));
    return Convert(*res);
  } catch (const std::exception& e) {
    return Failure(e.what());
  }
}

}  // namespace dlsched::cli
