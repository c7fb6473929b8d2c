# bash completion for jetfan(1): its commands, each command's flags, and their values where they
# can be known (files, log levels, after `jetfan exec ... --` a command). Installed as
# /usr/share/bash-completion/completions/jetfan; needs nothing but bash itself.
_jetfan() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=""
  ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
  # "--config=FI" comes as "--config" "=" "FI" (= is in COMP_WORDBREAKS).
  if [[ $cur == "=" ]]; then
    prev=${COMP_WORDS[COMP_CWORD - 1]} cur=""
  elif [[ $prev == "=" ]] && ((COMP_CWORD > 1)); then
    prev=${COMP_WORDS[COMP_CWORD - 2]}
  fi
  # The command is the first word that is not a flag (jetfan's own flags take no value).
  local command="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      -*) ;;
      *) command=${COMP_WORDS[i]}; break ;;
    esac
  done
  # dlq's own commands: "dlq list".
  if [[ $command == dlq ]] && ((i + 1 < COMP_CWORD)) && [[ ${COMP_WORDS[i + 1]} != -* ]]; then
    command="dlq ${COMP_WORDS[i + 1]}"
  fi
  # After exec's "--": a command and its arguments.
  if [[ $command == exec ]]; then
    for ((i++; i < COMP_CWORD; i++)); do
      if [[ ${COMP_WORDS[i]} == -- ]]; then
        if ((i + 1 == COMP_CWORD)); then
          mapfile -t COMPREPLY < <(compgen -c -- "$cur")
        else
          mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        fi
        return
      fi
    done
  fi
  case $prev in
    -c | --config | --control | --socket)
      compopt -o filenames 2> /dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return
      ;;
    --log-level)
      mapfile -t COMPREPLY < <(compgen -W "trace debug info warn error" -- "$cur")
      return
      ;;
    --handler | --seq | --concurrency | --timeout | --ack-timeout) return ;;  # a name, a range, a number, a duration
  esac
  local words
  case $command in
    "") words="serve check status tail reload pause resume dlq redrive unreadable step-down exec dev version help --version --help" ;;
    serve) words="--config --log-level --help" ;;
    check) words="--config --connect --print --help" ;;
    status) words="--json --config --control --help" ;;
    tail) words="--config --control --help" ;;
    reload) words="--config --control --help" ;;
    pause) words="--handler --config --control --help" ;;
    resume) words="--handler --config --control --help" ;;
    dlq) words="list --help" ;;
    "dlq list") words="--handler --seq --json --config --control --help" ;;
    redrive) words="--handler --all --seq --dry-run --config --control --help" ;;
    unreadable) words="--seq --config --control --help" ;;
    step-down) words="--config --control --help" ;;
    exec) words="--handler --socket --config --concurrency --timeout --ack-timeout --help --" ;;
    dev) words="--handler --pattern --nats-server --keep --help --" ;;
    version) words="--help" ;;
    help) words="serve check status tail reload pause resume dlq redrive unreadable step-down exec dev version --help" ;;
    *) return ;;
  esac
  mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
}
complete -F _jetfan jetfan
