# bash completion for ncclspy (installed into bash-completion's
# completions directory by meson install).
_ncclspy() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]}
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "analyze perf dump run shim-path help --help --version" -- "$cur"))
    return
  fi
  case $cmd in
    analyze)
      case $cur in
        -*) COMPREPLY=($(compgen -W "--json --html -o --run --help" -- "$cur")) ;;
        *) COMPREPLY=($(compgen -f -- "$cur")) ;;
      esac ;;
    perf)
      case $cur in
        -*) COMPREPLY=($(compgen -W "--json -o --run --help" -- "$cur")) ;;
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
    help) COMPREPLY=($(compgen -W "analyze perf dump run shim-path" -- "$cur")) ;;
  esac
}
complete -o default -F _ncclspy ncclspy
