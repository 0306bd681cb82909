#pragma once

// A small REST client for the CLI commands that talk to `dlsched serve` (cpp-httplib). Catches
// httplib's exceptions; connection failures are IoError values.

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"

namespace httplib {
class Client;
}

namespace dlsched::cli {

struct HttpResponse {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // the few the commands read
};

class RestClient {
 public:
  // `url` is http://HOST:PORT (a trailing slash is fine); `token` is sent as a Bearer token
  // when non-empty. InvalidArgument for a URL that is not http://.
  static Result<std::unique_ptr<RestClient>> Create(const std::string& url,
                                                    const std::string& token);
  ~RestClient();

  Result<HttpResponse> Get(const std::string& path);
  Result<HttpResponse> Post(const std::string& path, const std::string& json_body);
  Result<HttpResponse> Delete(const std::string& path);
  const std::string& url() const { return url_; }

 private:
  RestClient(std::string url, std::unique_ptr<httplib::Client> client);
  Status Failure(std::string_view what) const;

  std::string url_;
  std::unique_ptr<httplib::Client> client_;
};

// The server to talk to: `flag` if set, else $DLSCHED_SERVER, else http://127.0.0.1:8642.
std::string ServerUrl(const std::string& flag);
// The token: `flag` if set, else $DLSCHED_TOKEN, else empty.
std::string ClientToken(const std::string& flag);

}  // namespace dlsched::cli
