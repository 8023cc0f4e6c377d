# kube-lib.sh — how the local clusters' scripts (kube-up/kube-down.sh,
# cluster-up/cluster-down.sh) recognise a process of theirs. Sourced, not
# run; pid_of reads $DIR, the caller's state dir.

# alive PID: the process exists and is not a zombie (an exited child that its
# parent, possibly a non-reaping PID 1, has not collected yet).
alive() {
  local state
  kill -0 "$1" 2>/dev/null || return 1
  state=$(awk '{ print $3 }' 2>/dev/null <"/proc/$1/stat") || return 1
  [[ $state != Z ]]
}

# pid_of NAME: the recorded pid ($DIR/NAME.pid) of NAME if that process is
# alive and really is NAME of this state dir (its command line names the
# binary and the directory: guards against pid reuse); empty otherwise.
pid_of() {
  local f=$DIR/$1.pid pid cmd
  [[ -f $f ]] || return 0
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 0
  [[ $cmd == *"/$1 "*"$DIR/"* ]] || return 0
  echo "$pid"
}
