# bash completion for ncclspy (installed into bash-completion's
# completions directory by meson install).
_ncclspy() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "analyze perf dump export run shim-path help watch --help --version" -- "$cur"))
    return
  fi
  case $cmd in
    analyze)
      case $cur in
        -*) COMPREPLY=($(compgen -W "--json --html -o --run --threads --help" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -f -- "$cur")) ;;
      esac ;;
    perf)
      case $cur in
        -*) COMPREPLY=($(compgen -W "--json -o --run --threads --help" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -f -- "$cur")) ;;
      esac ;;
    export)
      case ${COMP_WORDS[COMP_CWORD-1]} in
        -o | --output) COMPREPLY=($(compgen -f -- "$cur")); return ;;
        --from | --to | --comm | --ranks | --run | --threads) return ;;
      esac
      case $cur in
        -*) COMPREPLY=($(compgen -W "--perfetto -o --output --from --to --comm --ranks --run --threads --help" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -f -- "$cur")) ;;
      esac ;;
    dump)
      case $cur in
        -*) COMPREPLY=($(compgen -W "--json --help" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -f -- "$cur")) ;;
      esac ;;
    run)
      local i
      for ((i = 2; i < COMP_CWORD; i++)); do
        if [ "${COMP_WORDS[i]}" = -- ]; then
          COMPREPLY=($(compgen -c -- "$cur"))
          return
        fi
      done
      COMPREPLY=($(compgen -W "-- --dir --no-analyze --help" -- "$cur")) ;;
    watch)
      case ${COMP_WORDS[COMP_CWORD-1]} in
        --interval | --hang-after | --threads) return ;; # numbers: nothing to offer
      esac
      case $cur in
        -*) COMPREPLY=($(compgen -W "--interval --hang-after --threads --help" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -d -- "$cur")) ;;
      esac ;;
    help) COMPREPLY=($(compgen -W "analyze perf dump export run shim-path watch" -- "$cur")) ;;
  esac
}
complete -o default -F _ncclspy ncclspy
