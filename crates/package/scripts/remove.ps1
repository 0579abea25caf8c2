#Requires -RunAsAdministrator
<#
.SYNOPSIS
Removes rsndk from a Windows test machine.

.DESCRIPTION
Run in an elevated PowerShell:

    .\remove.ps1 [-RemoveCertificates]

 1. `netcfg -v -u RSNDK_MUXP` removes the protocol edge; its notify object
    removes the virtual adapters and gives the NICs their bindings back.
 2. The two driver packages (rsndkp.inf, rsndk_mp.inf) leave the driver
    store (pnputil /delete-driver).
 3. With -RemoveCertificates, the package's test certificates leave Root
    and TrustedPublisher (matched by the thumbprints of the .cer files in
    this folder). Test signing stays on (`bcdedit /set testsigning off`
    and a reboot turn it off).
 4. What Windows now reports: the adapters, Get-NetAdapterRdma and
    Get-SmbClientNetworkInterface.
#>
param([switch]$RemoveCertificates)
$ErrorActionPreference = 'Stop'
$here = Split-Path -Parent $MyInvocation.MyCommand.Path

# 1. The protocol edge and, through its notify object, the virtual adapters.
& netcfg.exe -v -u RSNDK_MUXP
if ($LASTEXITCODE -ne 0) { Write-Host "netcfg -u RSNDK_MUXP returned $LASTEXITCODE (not installed, or a reboot is pending)" -ForegroundColor Yellow }

# 2. The driver packages.
Get-WindowsDriver -Online | Where-Object {
    (Split-Path $_.OriginalFileName -Leaf) -in 'rsndkp.inf', 'rsndk_mp.inf'
} | ForEach-Object {
    & pnputil.exe /delete-driver $_.Driver
    if ($LASTEXITCODE -ne 0) { Write-Host "pnputil /delete-driver $($_.Driver) returned $LASTEXITCODE" -ForegroundColor Yellow }
}

# 3. The certificates.
if ($RemoveCertificates) {
    foreach ($pair in @(@('rsndk-test-ca.cer', 'Root'), @('rsndk-test-signer.cer', 'TrustedPublisher'))) {
        $cer = Join-Path $here $pair[0]
        if (-not (Test-Path $cer)) { continue }
        $thumbprint = (New-Object System.Security.Cryptography.X509Certificates.X509Certificate2($cer)).Thumbprint
        Get-ChildItem "Cert:\LocalMachine\$($pair[1])" | Where-Object Thumbprint -eq $thumbprint | Remove-Item
    }
}

# 4. What Windows reports.
Get-NetAdapter | Format-Table -AutoSize Name, InterfaceDescription, Status, MacAddress, LinkSpeed
Get-NetAdapterRdma | Format-Table -AutoSize Name, InterfaceDescription, Enabled, Operational
Get-SmbClientNetworkInterface | Format-Table -AutoSize
