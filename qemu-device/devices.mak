# The devices of ohca's QEMU, built --without-default-devices (build.sh
# installs this file as configs/devices/x86_64-softmmu/ohca.mak): the PC
# machines (i440FX, which the test VMs use, and Q35 with PCI Express),
# Intel VT-d for Q35 (the vIOMMU jobs: docs/testing.md), virtio for the
# VMs' disk, 9p share and soft-RoCE NIC, and the ohca NIC.
# Every other device QEMU would build by default (graphics, sound, USB,
# SCSI, other NICs and storage controllers) the VMs never use.
CONFIG_I440FX=y
CONFIG_Q35=y
CONFIG_VTD=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_9P=y
CONFIG_OHCA=y
