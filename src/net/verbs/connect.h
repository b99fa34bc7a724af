// Connection set-up of the verbs transport. Listen opens a TCP listening socket on the port's IPv4
// address (the address inside a RoCE GID, else the first non-loopback interface's) and writes only that
// address and a random listener id into the handle. Connect (non-blocking, a PendingConnect under
// StepConnect) connects the socket and sends its ConnInfo (QP numbers, GID, LID, MTU, its FIFO's address
// and rkey); the acceptor answers with its own (QPs, size table), both sides move their QPs to RTR/RTS,
// and the connector ends with one "ready" byte so the acceptor never writes a clear-to-send to a QP
// that is not yet RTR. Accept is a state machine that never blocks. The socket stays open as the
// comm's liveness channel.
// Thread-safety: NCCL's service threads; one listen comm is used by one thread at a time.
#ifndef NCCLSCOPE_NET_VERBS_CONNECT_H_
#define NCCLSCOPE_NET_VERBS_CONNECT_H_

#include <vector>

#include "net/transport.h"
#include "net/verbs/discovery.h"

namespace ncclscope::net::verbs {

// `ports` are the transport's physical ports, `members` those of the device NCCL chose: one port (which
// subnet-aware routing, subnet_route.h, may replace), or a fused device's (fused_comm.h: one connection
// per member, each its own handshake on the listener's socket, tagged with the fused connection's id).
Status VerbsListen(const std::vector<VerbsNetDevice>& ports, const std::vector<int>& members, NetContext* ctx,
                   void* handle, ListenComm** listen_comm);
Status VerbsConnect(const std::vector<VerbsNetDevice>& ports, const std::vector<int>& members, NetContext* ctx,
                    void* handle, SendComm** send_comm);

}  // namespace ncclscope::net::verbs

#endif  // NCCLSCOPE_NET_VERBS_CONNECT_H_
