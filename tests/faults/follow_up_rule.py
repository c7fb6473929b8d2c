"""The follow-up rule of the checker, for handlers that publish a follow-up of each message through
jetfan, tied to it (faults-handler --follow-up; PROTOCOL.md "Publishing"). Pure.

For every handler h with a follow-up, and every stored message it matches:
  - if the server took jetfan's +ACK of the message, h's follow-up of it is stored: jetfan holds an
    ACK until the publishes tied to it are stored, under every fault;
  - h's follow-up of it is stored at most once: a redelivery's publish carries the same Nats-Msg-Id,
    which the stream drops within its duplicate window (longer than a run);
and no follow-up is stored for a message h does not match.
"""

import re
from collections import defaultdict

# jetfan's warning when it turns a handler's ACK into a NAK because a publish tied to the delivery
# was not stored (daemon/HandlerPublisher): the handler's ACK on record did not count.
_TURNED = re.compile(r'handler "([^"]+)" \(connection [^)]*\): delivery \d+ of stream seq (\d+) .*'
                     r'jetfan made its ACK a NAK')


# jetfan's note of failures its log's rate limit left out, inline ("(5 more like it were not logged:
# ...)") or after the fact ("5 more like the last warning were not logged in the last 10s: ...").
_UNLOGGED_NAKS = re.compile(r'(\d+) more like (?:it|the last warning) were not logged[^:]*: failed deliveries to '
                            r'handler "([^"]+)": the handler sent NAK')


def naks_not_logged(jetfan_log_text):
    """{handler: n}: the NAK failures of each handler the log's rate limit left out."""
    out = defaultdict(int)
    for m in _UNLOGGED_NAKS.finditer(jetfan_log_text):
        out[m.group(2)] += int(m.group(1))
    return out


def acks_turned_into_naks(jetfan_log_text):
    """{handler: {stream seq}} of the ACKs jetfan turned into NAKs (a tied publish not stored)."""
    out = defaultdict(set)
    for m in _TURNED.finditer(jetfan_log_text):
        out[m.group(1)].add(int(m.group(2)))
    return out


def held_ack_redelivery(sub, seq, turned, jetfan_acked, unlogged=None):
    """Whether a follow-up handler's message given again after its ACK is the ACK's due: that ACK
    counts only once the tied follow-up is stored, so the message comes again when jetfan turned it
    into a NAK (`turned`: the seqs it did for this handler), when a restarted nats-server redelivered
    it (`sub` "server_restarted"), or when the server redelivered it (a consumer leader that took
    over counts AckWait anew) before jetfan had sent its +ACK (`jetfan_acked` false: jetfan held the
    ACK while the follow-up was not stored).

    `unlogged`, when given, is a one-item list: how many NAK failures of this handler jetfan's log
    left out (naks_not_logged). A follow-up handler never NAKs on its own, so each was an ACK jetfan
    turned; a copy jetfan gave again itself (`sub` "jetfan_resent") is put down to one of them while
    any are left."""
    if seq in turned or sub == "server_restarted" or (sub == "server_redelivered" and not jetfan_acked):
        return True
    if sub == "jetfan_resent" and unlogged and unlogged[0] > 0:
        unlogged[0] -= 1
        return True
    return False


def load_follow_ups(path):
    """follow_ups.txt, one stored follow-up a line, "<handler> <id>" (as the harness reads them from
    the follow-up stream after the audit): {handler: {id: copies}}. Missing file: none."""
    out = defaultdict(lambda: defaultdict(int))
    try:
        with open(path) as f:
            for line in f:
                name, _, ident = line.strip().partition(" ")
                if ident.lstrip("-").isdigit():
                    out[name][int(ident)] += 1
    except FileNotFoundError:
        pass
    return out


def check_follow_ups(wants, settled, copies):
    """wants: the stored ids h matches; settled: the ids whose +ACK the server took; copies: {id:
    follow-ups stored}. The figures, and samples of what breaks the rule."""
    missing = sorted(i for i in wants & settled if copies.get(i, 0) == 0)
    doubled = sorted(i for i, n in copies.items() if n > 1)
    unexpected = sorted(i for i in copies if i not in wants)
    return {
        "stored": sum(copies.values()),
        "settled": len(wants & settled),
        "missing": len(missing),
        "missing_sample": missing[:10],
        "doubled": len(doubled),
        "doubled_sample": doubled[:10],
        "unexpected": len(unexpected),
        "unexpected_sample": unexpected[:10],
    }


def broken(result):
    """What the figures of check_follow_ups break, one line each."""
    out = []
    if result["missing"]:
        out.append(f"{result['missing']} message(s) acknowledged at the server without their follow-up stored, "
                   f"e.g. ids {result['missing_sample'][:5]}")
    if result["doubled"]:
        out.append(f"{result['doubled']} message(s) with their follow-up stored more than once, e.g. ids "
                   f"{result['doubled_sample'][:5]}")
    if result["unexpected"]:
        out.append(f"{result['unexpected']} follow-up(s) of messages the handler does not match, e.g. ids "
                   f"{result['unexpected_sample'][:5]}")
    return out
