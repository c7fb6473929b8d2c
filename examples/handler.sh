#!/bin/sh
# A complete handler in shell, run once per message by jetfan exec:
#   jetfan exec --handler builder --socket /run/jetfan/builder.sock -- examples/handler.sh
# The payload is on stdin; JETFAN_KEY, JETFAN_SUBJECT, JETFAN_SEQ, JETFAN_DELIVERIES, JETFAN_PUBLISHED
# and JETFAN_HEADERS describe it (jetfan exec --help lists them all).
# Exit 0 acks; exit 100 terms (the last stderr line is the reason); any other exit naks.
# To publish in reply (publish.subjects in the handler's config), write "<subject> <payload>" lines
# to $JETFAN_PUBLISH_FD: echo "builds.started $JETFAN_SEQ" >&"$JETFAN_PUBLISH_FD"
payload=$(cat)
case $payload in
  *'"bad"'*) echo "cannot handle $payload" >&2; exit 100 ;;
esac
echo "got $JETFAN_KEY (seq $JETFAN_SEQ, delivery $JETFAN_DELIVERIES): $payload"
