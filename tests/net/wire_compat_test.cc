// Mixed builds on the TCP wire: a connector of an older build (wire version 1, a 24-byte hello) must meet
// a clean version error at the listener, not a listener waiting for the 88 bytes of today's hello.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "harness.h"
#include "net/net_types.h"
#include "socket/interfaces.h"
#include "net/tcp/wire.h"

namespace ncclscope::testing {
namespace {

// Wire version 1's hello, as older builds send it.
struct HelloV1 {
  uint32_t magic;
  uint16_t version;
  uint16_t nsocks;
  uint32_t listener_id;
  uint16_t index;
  uint16_t reserved;
  uint64_t conn_id;
};
static_assert(sizeof(HelloV1) == 24);

TEST(TcpWireCompat, OlderConnectorGetsAVersionError) {
  pid_t pid = Spawn(
      [] {
        auto net = OpenAndInit(12, TableSource::kLinked);
        char handle[NCCLSCOPE_NET_HANDLE_MAXSIZE];
        void* lc = nullptr;
        CHILD_CHECK(net->Listen(0, handle, &lc) == 0);
        net::tcp::TcpHandlePayload payload;
        memcpy(&payload, handle + sizeof(net::HandleHeader), sizeof(payload));
        CHILD_CHECK(payload.wire_version == net::tcp::kWireVersion);
        // One socket of the connection is enough: the listener judges each hello as it arrives.
        const int fd = socket(payload.addr.sa.sa_family, SOCK_STREAM, 0);
        CHILD_CHECK(fd >= 0 && connect(fd, &payload.addr.sa, sock::SockAddrLen(payload.addr)) == 0);
        const HelloV1 h{net::tcp::kHelloMagic, 1, payload.nsocks, payload.listener_id, 0, 0, 99};
        CHILD_CHECK(send(fd, &h, sizeof(h), 0) == static_cast<ssize_t>(sizeof(h)));
        void* rc = nullptr;
        const int r = AcceptLoop(*net, lc, &rc, 10);
        CHILD_CHECK(r != 0 && r != -1);  // an error, not the deadline
        CHILD_CHECK(rc == nullptr);
        CHILD_CHECK(LastWarning().find("version 1") != std::string::npos);
        CHILD_CHECK(LastWarning().find("expected version " + std::to_string(net::tcp::kWireVersion)) !=
                    std::string::npos);
        close(fd);
        CHILD_CHECK(net->CloseListen(lc) == 0);
        return 0;
      },
      BaseEnv());
  EXPECT_EQ(Reap(pid, 30), 0);
}

}  // namespace
}  // namespace ncclscope::testing
