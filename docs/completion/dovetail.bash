# bash completion for dovetail: source it, or install it as
# /usr/share/bash-completion/completions/dovetail (make install does).
_dovetail() {
  local cur prev cmd
  cur=${COMP_WORDS[COMP_CWORD]}
  prev=${COMP_WORDS[COMP_CWORD-1]}
  cmd=${COMP_WORDS[1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "plan disrupt pool catalog serve fakecloud simulate check version --version --help" -- "$cur"))
    return
  fi
  case $prev in
    -o|--output)
      if [ "$cmd" = catalog ]; then COMPREPLY=($(compgen -W "table json" -- "$cur"))
      else COMPREPLY=($(compgen -W "json yaml table" -- "$cur")); fi
      return ;;
    --catalog) COMPREPLY=($(compgen -W "aws-us-east-1 azure-eastus" -- "$cur") $(compgen -f -- "$cur")); return ;;
    --capacity-type) COMPREPLY=($(compgen -W "on-demand spot reserved" -- "$cur")); return ;;
    --type|--zone|--min-cpu|--max-price) return ;;
    --packing) COMPREPLY=($(compgen -W "cost ffd" -- "$cur")); return ;;
    --provider) COMPREPLY=($(compgen -W "sim http" -- "$cur")); return ;;
    --log-format) COMPREPLY=($(compgen -W "json logfmt" -- "$cur")); return ;;
    --policy-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --policy|--unavailable|--state|--config|--token-file|-f|--filename|--trace|--scenario|--out|--report|--spot-advisor|--scheduler-config)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  local opts
  case $cmd in
    plan) opts="--catalog -o --output --now --seed --packing --policy --policy-dir --unavailable --timings --explain --scheduler-config -f --help" ;;
    disrupt) opts="--catalog -o --output --now --seed --policy --policy-dir --explain --spot-to-spot --scheduler-config -f --help" ;;
    pool) opts="-o --output --now --seed --policy -f --help" ;;
    catalog) opts="--catalog -o --output --type --zone --capacity-type --min-cpu --max-price --convert --help" ;;
    serve) opts="$(dovetail serve --help 2>/dev/null | sed -n 's/^  \(--[a-z-]*\).*/\1/p' | tr '\n' ' ')" ;;
    fakecloud) opts="--listen --catalog --ice --help" ;;
    simulate) opts="$(dovetail simulate --help 2>/dev/null | grep -o -- '--[a-z-]*' | sort -u | tr '\n' ' ') -f -o" ;;
    check) opts="--explain --help" ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -o filenames -F _dovetail dovetail
