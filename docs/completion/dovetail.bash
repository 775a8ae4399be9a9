# bash completion for dovetail: source it, or install it as
# /usr/share/bash-completion/completions/dovetail (make install does).
_dovetail() {
  local cur prev cmd
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  cmd=${COMP_WORDS[1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "plan disrupt pool serve fakecloud check version --version --help" -- "$cur"))
    return
  fi
  case $prev in
    -o|--output) COMPREPLY=($(compgen -W "json yaml table" -- "$cur")); return ;;
    --packing) COMPREPLY=($(compgen -W "cost ffd" -- "$cur")); return ;;
    --provider) COMPREPLY=($(compgen -W "sim http" -- "$cur")); return ;;
    --log-format) COMPREPLY=($(compgen -W "json logfmt" -- "$cur")); return ;;
    --policy-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --catalog|--policy|--unavailable|--state|--config|--token-file|-f) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  local opts
  case $cmd in
    plan) opts="--catalog -o --output --now --seed --packing --policy --policy-dir --unavailable --timings --explain -f --help" ;;
    disrupt) opts="--catalog -o --output --now --seed --policy --policy-dir --explain --spot-to-spot -f --help" ;;
    pool) opts="-o --output --now --seed --policy -f --help" ;;
    serve) opts="$(dovetail serve --help 2>/dev/null | sed -n 's/^  \(--[a-z-]*\).*/\1/p' | tr '\n' ' ')" ;;
    fakecloud) opts="--listen --catalog --ice --help" ;;
    check) opts="--explain --help" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _dovetail dovetail
