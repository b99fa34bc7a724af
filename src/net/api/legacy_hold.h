// The runtime reference of the legacy net ABIs (v8-v10). Those tables have no finalize and NCCL calls
// their init once per load, so a reference per init could never be given back. Instead the legacy half
// holds one reference from its init (or, after it was given back, from its next opened object) until the
// last net object it opened (listen, send and receive comms of the legacy context) is closed: a job that
// loads only the net half starts the exporters, the stall watch and the janitor at net init, and its last
// communicator's close stops and joins them after their final write, as a v11+ finalize does. An init that
// never opens an object keeps its reference until the process exits (its threads are never joined then;
// the library is -z nodelete). Thread-safe: one lock, taken per legacy open and close, never per request.
#ifndef NCCLSCOPE_NET_API_LEGACY_HOLD_H_
#define NCCLSCOPE_NET_API_LEGACY_HOLD_H_

namespace ncclscope::net {

class LegacyHold {
 public:
  static LegacyHold& Instance();

  // After a successful legacy init: takes the reference unless it is held already (no double start).
  void OnInit();
  // After a legacy object is opened: counts it, taking the reference again if it was given back.
  void OnOpen(const void* object);
  // Close of any net object, in two steps around the transport's Close (which frees it): Forget stops
  // counting it (before its address can be handed out again) and says whether it was a legacy one;
  // AfterClose then gives the reference back if no legacy object is left open.
  bool Forget(const void* object);
  void AfterClose();

  bool IsOpen(const void* object);  // an open legacy listen comm: its accepted comms are legacy too
  bool held();
  int open_objects();

 private:
  LegacyHold() = default;
};

}  // namespace ncclscope::net

#endif  // NCCLSCOPE_NET_API_LEGACY_HOLD_H_
