"""The dead-letter rule of the checker, for handlers with a retry budget and dead letters. Pure.

For every handler h with `max_attempts` and a dead-letter subject, and every stored message it
matches, one of:
  confirmed       h ACKed it (in time, or late: jetfan then gave it up or re-sent it)
  dead-lettered   a dead letter of it for h is in the dead-letter stream
and:
  - a message h ACKed in time, in the jetfan that gave it, has no dead letter for h;
  - no more dead letters of it for h than budgets h used up on it: one per jetfan generation in
    which h failed it max_attempts times (a restart begins the count again; a publish whose answer
    was lost in a restart may be stored once more by the next jetfan, which used up a budget too).
"""

from collections import defaultdict


def used_up_budgets(deliveries, max_attempts, generation):
    """Budgets used up on one message by one handler: per jetfan generation, its failed deliveries
    (answer other than "ack") divided by max_attempts, rounded down."""
    failures = defaultdict(int)
    for d in deliveries:
        if d["answer"] != "ack":
            failures[generation(d)] += 1
    return sum(n // max_attempts for n in failures.values())


def used_up_at(deliveries, max_attempts, generation, failed_at=None):
    """When a handler first used up its budget on one message: when its max_attempts-th failed
    delivery within one jetfan generation failed. None if it never did. Its dead letter, and so
    jetfan's ack of the message, can only come after that. failed_at(d, previous) says when delivery
    d failed (previous: the delivery before it, or None); by default its answer time or, with no
    answer, its delivery time."""
    failures = defaultdict(int)
    previous = None
    for d in deliveries:
        if d["answer"] != "ack":
            g = generation(d)
            failures[g] += 1
            if failures[g] == max_attempts:
                return failed_at(d, previous) if failed_at else d.get("answer_t") or d["t"]
        previous = d
    return None


def check_dead_letters(wants, received, dead_letters, max_attempts, generation):
    """wants: ids h must settle. received: id -> its deliveries to h, oldest first (dicts with "t" and
    "answer": "ack", "nak", "drop" or None). dead_letters: id -> dead letters of it for h.
    generation: delivery -> the jetfan generation that gave it (with two jetfans, which one too). Returns the figures and samples of the rule."""
    confirmed = {i for i, ds in received.items() if any(d["answer"] == "ack" for d in ds)}
    unsettled = sorted(i for i in wants if i not in confirmed and dead_letters.get(i, 0) == 0)
    # Confirmed by its last delivery, so no budget was used up after it: a dead letter is wrong.
    dead_but_confirmed = sorted(i for i in confirmed if dead_letters.get(i, 0) > 0
                                and received[i][-1]["answer"] == "ack"
                                and used_up_budgets(received[i], max_attempts, generation) == 0)
    too_many = sorted(i for i, n in dead_letters.items()
                      if n > used_up_budgets(received.get(i, []), max_attempts, generation))
    return {
        "dead_lettered": sum(1 for n in dead_letters.values() if n > 0),
        "dead_letters": sum(dead_letters.values()),
        "unsettled": len(unsettled),
        "unsettled_sample": unsettled[:20],
        "dead_but_confirmed": len(dead_but_confirmed),
        "dead_but_confirmed_sample": dead_but_confirmed[:20],
        "too_many_dead_letters": len(too_many),
        "too_many_dead_letters_sample": too_many[:20],
    }


def broken(verdict):
    """The rule's findings, in words; empty when it holds."""
    out = []
    if verdict["unsettled"]:
        out.append(f"{verdict['unsettled']} message(s) neither confirmed nor dead-lettered")
    if verdict["dead_but_confirmed"]:
        out.append(f"{verdict['dead_but_confirmed']} message(s) dead-lettered that the handler confirmed")
    if verdict["too_many_dead_letters"]:
        out.append(f"{verdict['too_many_dead_letters']} message(s) with more dead letters than used-up budgets")
    return out


def load_dead_letters(path):
    """dead_letters.txt, one dead letter a line, "<handler> <id>" (as the auditor reads them from the
    dead-letter stream): handler -> id -> count. Empty when there is no such file."""
    out = defaultdict(lambda: defaultdict(int))
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    out[parts[0]][int(parts[1])] += 1
    except FileNotFoundError:
        pass
    return out
