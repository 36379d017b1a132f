# DRM helpers for guest scripts (busybox sh), sourced by them.

# The DRM driver behind a /sys/class/drm entry: a virtio device's child
# driver, else the device's driver unless that is only bus glue, else the
# device's own name (platform and faux devices such as vgem).
drm_driver() {
  for link in "$1"/device/virtio*/driver "$1"/device/driver; do
    [ -e "$link" ] || continue
    name=$(basename "$(readlink -f "$link")")
    case "$name" in virtio-pci | faux_driver) continue ;; esac
    echo "$name"
    return
  done
  basename "$(readlink -f "$1/device")"
}

# drm_node DRIVER card|renderD: the first such /dev/dri node of DRIVER.
drm_node() {
  for entry in /sys/class/drm/"$2"[0-9]*; do
    case "$(basename "$entry")" in *-*) continue ;; esac
    if [ "$(drm_driver "$entry")" = "$1" ]; then
      echo "/dev/dri/$(basename "$entry")"
      return
    fi
  done
  echo "no $2 node of $1" >&2
  return 1
}
